/**
 * End-to-end test helpers over a simulated cluster (src/sim/cluster/cluster.ts): requests through the
 * Coordinator's proxy, SSE parsing, the digest of what the client received, the engine records of
 * one request id, and the Coordinator's reservations returning to zero.
 */
import { until } from '../../src/sim/cluster/process.ts';
import type { SimCluster } from '../../src/sim/cluster/cluster.ts';

export { SimCluster } from '../../src/sim/cluster/cluster.ts';
export { until } from '../../src/sim/cluster/process.ts';

/** Generous bound for any wait of an end-to-end test. */
export const E2E_DEADLINE_MS = 20_000;

/**
 * POSTs a JSON body to the proxy with a request id.
 * @example const res = await proxyPost(cluster, '/v1/completions', body, 'req-1');
 */
export function proxyPost(cluster: SimCluster, path: string, body: unknown, requestId: string, signal?: AbortSignal): Promise<Response> {
  return cluster.fetch(`${cluster.proxyUrl}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-request-id': requestId },
    body: JSON.stringify(body),
    ...(signal === undefined ? {} : { signal }),
  });
}

/** The `data:` payloads of an SSE body, in order. */
export function sseData(text: string): string[] {
  return text
    .split('\n\n')
    .map((event) => event.trim())
    .filter((event) => event !== '')
    .map((event) => event.replace(/^data: ?/, ''));
}

/** Hex SHA-256 of a body. */
export function sha256(text: string | Uint8Array): string {
  return new Bun.CryptoHasher('sha256').update(text).digest('hex');
}

export interface LegRecord {
  engine: string;
  requestId: string;
  leg: string;
  status: number;
  outcome: string;
  verified: boolean | null;
  digest: string | null;
  blocks: number;
  bytesPulled: number;
  completionTokens: number;
  /** Prompt tokens the engine found in its prefix cache. */
  cachedTokens: number;
  error: string | null;
  traceparent: string | null;
}

/**
 * Every engine's records of one request id, with the engine's name.
 * @example const [p, d] = await legs(cluster, 'req-1');
 */
export async function legs(cluster: SimCluster, requestId: string): Promise<LegRecord[]> {
  const live = cluster.engines.filter((e) => e.process.running());
  const lists = await Promise.all(
    live.map(async (e) => (await cluster.requests(e.name, requestId)).map((r) => ({ ...(r as unknown as LegRecord), engine: e.name }))),
  );
  return lists.flat();
}

/**
 * Waits until the records of a request satisfy `done` (legs are logged as they end, which may be
 * just after the client saw its answer).
 * @example const records = await legsWhen(cluster, id, (rs) => rs.every((r) => r.outcome !== 'running'));
 */
export function legsWhen(cluster: SimCluster, requestId: string, done: (records: LegRecord[]) => boolean): Promise<LegRecord[]> {
  let last: LegRecord[] = [];
  return until(
    async () => {
      last = await legs(cluster, requestId);
      return done(last) ? last : undefined;
    },
    E2E_DEADLINE_MS,
    () => `records of ${requestId}: ${JSON.stringify(last)}`,
  );
}

/** What the Coordinator holds for requests: active ledger records and reserved slots/blocks. */
export async function reservations(cluster: SimCluster): Promise<{ active: number; slots: number; blocks: number }> {
  const transfers = (await (await fetch(`${cluster.coordinatorUrl}/v1/transfers`, { headers: cluster.authorization() })).json()) as {
    active: unknown[];
  };
  const info = (await (await fetch(`${cluster.coordinatorUrl}/v1/coordinator_info`, { headers: cluster.authorization() })).json()) as {
    schedule_info: { allocated_slots: number; allocated_blocks: number }[];
  };
  return {
    active: transfers.active.length,
    slots: info.schedule_info.reduce((n, i) => n + i.allocated_slots, 0),
    blocks: info.schedule_info.reduce((n, i) => n + i.allocated_blocks, 0),
  };
}

/**
 * Waits until the Coordinator holds no reservation and no engine holds KV blocks.
 * @example await settled(cluster);
 */
export async function settled(cluster: SimCluster): Promise<void> {
  let last = '';
  await until(
    async () => {
      const held = await reservations(cluster);
      const engines = await Promise.all(
        cluster.engines
          .filter((e) => e.process.running())
          .map(async (e) => [e.name, (await cluster.simStatus(e.name)).kv['blocks_used']] as const),
      );
      last = JSON.stringify({ coordinator: held, engineBlocksUsed: Object.fromEntries(engines) });
      return held.active === 0 && held.slots === 0 && held.blocks === 0 && engines.every(([, used]) => used === 0) ? true : undefined;
    },
    E2E_DEADLINE_MS,
    () => `still held: ${last}`,
  );
}
