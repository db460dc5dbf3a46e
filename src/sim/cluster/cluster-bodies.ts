/**
 * What a Controller would send to a simulated cluster, built from the engines' addresses: each
 * engine's instance config file, its `POST /v1/role/{role}` body, and the Coordinator's
 * `POST /v1/instances/refresh` snapshot.
 */
import { SIM_TOTAL_SLOTS } from '../engine/engine.ts';

export interface EngineLayout {
  readonly name: string;
  readonly role: 'prefill' | 'decode';
  /** Instance id in the Coordinator's registry. */
  readonly id: number;
  /** The engine's host: its listeners and its devices' link addresses. */
  readonly ip: string;
  readonly devices: number;
}

export interface EngineGeometry {
  readonly numBlocks: number;
  readonly blockTokens: number;
  readonly maxModelLen: number;
  /** Under sglang, each P's entry names its bootstrap server's port (its management listener). */
  readonly protocol?: 'vllm' | 'sglang';
}

/**
 * The instance config file of one engine: listeners on its ip, device d on ip:(base + d).
 * @example engineConfig({ name: 'p0', role: 'prefill', id: 100, ip: '127.9.0.2', devices: 2 }, 31000)
 */
export function engineConfig(engine: EngineLayout, linkBasePort: number): Record<string, unknown> {
  return {
    ServerConfig: { ipAddress: engine.ip, managementIpAddress: engine.ip },
    pdlink: {
      link_base_port: linkBasePort,
      devices: Array.from({ length: engine.devices }, (_, d) => ({ device_logical_id: d, device_ip: engine.ip })),
      // Two threads are plenty for a simulated engine and keep a many-process cluster light.
      pool: { threads: 2 },
    },
  };
}

/**
 * The role body of one engine: its devices, and every engine of the other role as peers.
 * @example roleBody(d0, ps)
 */
export function roleBody(engine: EngineLayout, peers: readonly EngineLayout[]): Record<string, unknown> {
  const devices = (e: EngineLayout) => Array.from({ length: e.devices }, (_, d) => ({ device_logical_id: String(d), device_ip: e.ip }));
  return {
    local: { server_ip: engine.ip, device: devices(engine) },
    peers: peers.map((p) => ({ server_ip: p.ip, device: devices(p) })),
  };
}

export interface RefreshEntry {
  readonly engine: EngineLayout;
  readonly inferencePort: number;
  readonly managementPort: number;
  /** Where the engine publishes its KV events, when it does. */
  readonly kvEvents?: { readonly endpoint: string; readonly replay: string } | undefined;
}

/**
 * The refresh snapshot of the given engines; every D names every P of the snapshot as a peer
 * (and every P names every D), as the Controller does for a linked full mesh.
 * @example const body = refreshBody(entries, 'pdlink-sim', { numBlocks: 1024, blockTokens: 16, maxModelLen: 4096 });
 */
export function refreshBody(entries: readonly RefreshEntry[], model: string, geometry: EngineGeometry): Record<string, unknown> {
  const ids = (role: 'prefill' | 'decode') => entries.filter((e) => e.engine.role === role).map((e) => e.engine.id);
  const slots = SIM_TOTAL_SLOTS;
  return {
    ids: entries.map((e) => e.engine.id),
    instances: entries.map(({ engine, inferencePort, managementPort, kvEvents }) => {
      const blocks = geometry.numBlocks * engine.devices;
      const prefill = engine.role === 'prefill';
      const peers = ids(prefill ? 'decode' : 'prefill');
      return {
        id: engine.id,
        ip: engine.ip,
        port: String(inferencePort),
        metric_port: String(managementPort),
        model_name: model,
        ...(prefill && geometry.protocol === 'sglang' ? { bootstrap_port: managementPort } : {}),
        ...(kvEvents === undefined ? {} : { kv_events_endpoint: kvEvents.endpoint, kv_events_replay_endpoint: kvEvents.replay }),
        static_info: {
          group_id: 0,
          max_seq_len: geometry.maxModelLen,
          max_output_len: Math.max(1, Math.min(1024, geometry.maxModelLen - 1)),
          total_slots_num: slots,
          total_block_num: blocks,
          block_size: geometry.blockTokens,
          label: prefill ? 2 : 3,
          role: prefill ? 80 : 68,
        },
        dynamic_info: { avail_slots_num: slots, avail_block_num: blocks, ...(prefill && peers.length === 0 ? {} : { peers }) },
      };
    }),
  };
}

/**
 * One instance of a controller's topology file for an engine of a launched cluster.
 * @example topologyEntry(d0, d0.manageUrl, d0.inferenceUrl, 'pdlink-sim', geometry)
 */
export function topologyEntry(
  engine: EngineLayout,
  manageUrl: string,
  inferenceUrl: string,
  model: string,
  geometry: EngineGeometry,
): Record<string, unknown> {
  return {
    id: engine.id,
    manage_url: manageUrl,
    inference_url: inferenceUrl,
    model_name: model,
    server_ip: engine.ip,
    devices: Array.from({ length: engine.devices }, (_, d) => ({ device_logical_id: String(d), device_ip: engine.ip })),
    role: engine.role,
    static_info: {
      max_seq_len: geometry.maxModelLen,
      max_output_len: Math.max(1, Math.min(1024, geometry.maxModelLen - 1)),
      total_slots_num: SIM_TOTAL_SLOTS,
      total_block_num: geometry.numBlocks * engine.devices,
      block_size: geometry.blockTokens,
    },
  };
}
