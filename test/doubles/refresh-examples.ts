/**
 * Refresh bodies for tests, benchmarks and documentation: the source document's own example, and
 * generated snapshots of any size shaped like a real cluster (groups of 16, P and D in full mesh).
 */

/** The request example of the source document, byte for byte. */
export const SEED_REFRESH_BODY = `{
    "ids": [
        0,1
    ],
    "instances": [
        {
            "id": 0,
            "ip": "0.0.0.0",
            "port": "1025",
            "metric_port": "1026",
            "model_name": "your_model_name",
            "static_info": {
                "group_id": 0,
                "max_seq_len": 2048,
                "max_output_len": 512,
                "total_slots_num": 200,
                "total_block_num": 1024,
                "block_size": 128,
                "label": 2,
                "role": 80
            },
            "dynamic_info": {
                "avail_slots_num": 200,
                "avail_block_num": 1024
            }
        },
        {
            "id": 1,
            "ip": "0.0.0.0",
            "port": "1025",
            "metric_port": "1026",
            "model_name": "your_model_name",
            "static_info": {
                "group_id": 0,
                "max_seq_len": 2048,
                "max_output_len": 512,
                "total_slots_num": 200,
                "total_block_num": 1024,
                "block_size": 128,
                "label": 3,
                "role": 68
            },
            "dynamic_info": {
                "avail_slots_num": 200,
                "avail_block_num": 1024,
                "peers": [
                    0
                ]
            }
        }
    ]
}`;

/** A mutable plain-JSON refresh body, for tests to edit before sending. */
export interface ExampleBody {
  ids: unknown[];
  instances: Record<string, any>[];
  [extra: string]: unknown;
}

/**
 * A fresh copy of the source document's example as an object.
 * @example const body = seedExample(); body.instances[0].port = '1023';
 */
export function seedExample(): ExampleBody {
  return JSON.parse(SEED_REFRESH_BODY) as ExampleBody;
}

/** Instances per group; the first half of a group is prefill, the second half decode. */
export const EXAMPLE_GROUP_SIZE = 16;

/**
 * A valid snapshot of `n` instances: groups of 16 (8 P + 8 D, the last group possibly smaller),
 * each D listing the P of its group as peers and each P the D. `load` shifts the free slots and
 * blocks, as successive refreshes of a busy cluster would.
 * @example const body = exampleSnapshot(4096); const next = exampleSnapshot(4096, { load: 1 });
 */
export function exampleSnapshot(n: number, options: { load?: number } = {}): ExampleBody {
  const load = options.load ?? 0;
  const instances: Record<string, any>[] = [];
  for (let id = 0; id < n; id++) {
    const groupStart = id - (id % EXAMPLE_GROUP_SIZE);
    const groupEnd = Math.min(groupStart + EXAMPLE_GROUP_SIZE, n);
    const split = groupStart + Math.ceil((groupEnd - groupStart) / 2);
    const prefill = id < split;
    const peers: number[] = [];
    for (let peer = prefill ? split : groupStart; peer < (prefill ? groupEnd : split); peer++) peers.push(peer);
    instances.push({
      id,
      ip: `10.${(id >> 16) & 255}.${(id >> 8) & 255}.${id & 255}`,
      port: '1025',
      metric_port: '1026',
      model_name: 'example-model',
      static_info: {
        group_id: groupStart / EXAMPLE_GROUP_SIZE,
        max_seq_len: 4096,
        max_output_len: 1024,
        total_slots_num: 200,
        total_block_num: 1024,
        block_size: 128,
        label: prefill ? 2 : 3,
        role: prefill ? 80 : 68,
      },
      dynamic_info: { avail_slots_num: 200 - (load % 200), avail_block_num: 1024 - (load % 1024), peers },
    });
  }
  return { ids: instances.map((i) => i.id as number), instances };
}
