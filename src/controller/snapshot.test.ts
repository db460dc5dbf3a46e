import { describe, expect, test } from 'bun:test';
import * as v from 'valibot';
import { RefreshSchema } from '../schema/refresh.ts';
import { composeSnapshot, servingPeers, type SnapshotCandidate } from './snapshot.ts';

const STATIC = { maxSeqLen: 4096, maxOutputLen: 1024, totalSlots: 64, totalBlocks: 512, blockSize: 16 };

function candidate(
  id: number,
  role: 'prefill' | 'decode',
  linkedPeers: number[],
  extra: Partial<SnapshotCandidate> = {},
): SnapshotCandidate {
  return {
    id,
    role,
    group: 0,
    ip: '127.0.0.2',
    port: 4000 + id,
    metricPort: 5000 + id,
    modelName: 'm',
    staticInfo: STATIC,
    resources: undefined,
    linkedPeers,
    ...extra,
  };
}

describe('composeSnapshot', () => {
  test('lists peers on P and D and is a valid refresh body', () => {
    const body = composeSnapshot([candidate(1, 'prefill', [3]), candidate(2, 'prefill', [3]), candidate(3, 'decode', [1, 2])]);
    expect(body.ids).toEqual([1, 2, 3]);
    expect(body.instances.map((i) => i.dynamic_info.peers)).toEqual([[3], [3], [1, 2]]);
    expect(body.instances[2]!.static_info).toMatchObject({ role: 68, label: 3, group_id: 0 });
    expect(v.safeParse(RefreshSchema, body).success).toBe(true);
  });

  test("an instance's KV-event endpoints from the topology file go into its refresh entry", () => {
    const kvEvents = { endpoint: 'tcp://10.0.0.5:5557', replayEndpoint: 'tcp://10.0.0.5:5558', dpSize: 2 };
    const body = composeSnapshot([candidate(1, 'prefill', [3], { kvEvents }), candidate(3, 'decode', [1])]);
    expect(body.instances[0]).toMatchObject({
      kv_events_endpoint: 'tcp://10.0.0.5:5557',
      kv_events_replay_endpoint: 'tcp://10.0.0.5:5558',
      kv_events_dp_size: 2,
    });
    expect('kv_events_endpoint' in body.instances[1]!).toBe(false);
    expect(v.safeParse(RefreshSchema, body).success).toBe(true);
  });

  test('peers not in the snapshot or of the same role are dropped, and an instance left with none is left out', () => {
    // 9 is not a candidate (dead or not ready); 2 reports no link; 4 linked only 2, so it goes with 2.
    const body = composeSnapshot([
      candidate(1, 'prefill', [3, 9]),
      candidate(2, 'prefill', []),
      candidate(3, 'decode', [1, 2, 4]),
      candidate(4, 'decode', [2]),
    ]);
    expect(body.ids).toEqual([1, 3]);
    expect(body.instances.map((i) => i.dynamic_info.peers)).toEqual([[3], [1]]);
    expect(servingPeers([candidate(1, 'prefill', []), candidate(3, 'decode', [1])]).size).toBe(0);
  });

  test('a D linked to no P of the snapshot is left out, and a P that only it linked follows', () => {
    const body = composeSnapshot([
      candidate(1, 'prefill', [2]),
      candidate(2, 'decode', []),
      candidate(3, 'prefill', [4]),
      candidate(4, 'decode', [3]),
    ]);
    expect(body.ids).toEqual([3, 4]);
  });

  test('dynamic_info comes from the reported resources, else the static values', () => {
    const resources = { totalSlots: 10, availSlots: 7, totalBlocks: 100, availBlocks: 60 };
    const body = composeSnapshot([candidate(1, 'prefill', [2], { resources }), candidate(2, 'decode', [1])]);
    expect(body.instances[0]!.static_info.total_slots_num).toBe(10);
    expect(body.instances[0]!.dynamic_info).toEqual({ avail_slots_num: 7, avail_block_num: 60, peers: [2] });
    expect(body.instances[1]!.dynamic_info).toEqual({ avail_slots_num: 64, avail_block_num: 512, peers: [1] });
  });
});
