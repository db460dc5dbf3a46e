/**
 * Read-only routes over the KV ledger: `GET /v1/transfers` (active and recent transfer records,
 * totals) and `GET /v1/coordinator_info` (per-instance allocations, as MindIE's Coordinator reports
 * them to its Controller). Wire names are snake_case; the ledger's camelCase stays inside.
 * A record's `request_id` is the Coordinator's own id of the request; `client_request_id` is the
 * `X-Request-Id` the client sent (or the Coordinator made) and the engines saw on both legs.
 */
import { Hono } from 'hono';
import type { ClusterView } from '../cluster/instance.ts';
import { errors } from '../core/errors.ts';
import type { KvLedger } from '../ledger/ledger.ts';
import type { TransferRecord } from '../ledger/records.ts';
import type { LedgerTotals } from '../ledger/types.ts';
import { onError } from './envelope.ts';

/** Request counters `coordinator_info` reports besides allocations; they come from the proxy, which sees requests. */
export interface RequestStats {
  /** Requests currently in the Coordinator. */
  readonly requestNum: number;
  /** Average prompt and output lengths, in tokens. */
  readonly inputLen: number;
  readonly outputLen: number;
  /** pdlink's: requests taken on so far, and their prompt and asked-for output tokens (the controller's SLA planner reads their growth). */
  readonly totals?: { readonly requests: number; readonly promptTokens: number; readonly outputTokens: number };
}

export interface LedgerRouteDeps {
  ledger: KvLedger;
  /** The registry; `generation` is 0 until the first accepted refresh. */
  cluster: ClusterView & { readonly generation: number };
  /** Default: `requestNum` = active transfer records, lengths 0 (unknown). */
  requestStats?: () => RequestStats;
}

/**
 * Routes `GET /v1/transfers` and `GET /v1/coordinator_info`.
 * @example managementApp.route('/', ledgerRoutes({ ledger, cluster: registry }));
 */
export function ledgerRoutes(deps: LedgerRouteDeps): Hono {
  const app = new Hono();
  app.onError(onError);

  app.get('/v1/transfers', (c) => {
    const snapshot = deps.ledger.snapshot();
    return c.json({
      active: snapshot.active.map(recordWire),
      recent: snapshot.recent.map(recordWire),
      totals: totalsWire(snapshot.totals),
    });
  });

  app.get('/v1/coordinator_info', (c) => {
    if (deps.cluster.generation === 0) throw errors.notReady('no instance refresh has been received yet');
    const scheduleInfo = [...deps.cluster.all()]
      .sort((a, b) => a.id - b.id)
      .map((instance) => {
        const load = deps.ledger.instanceLoad(instance.id);
        return { id: instance.id, allocated_slots: load?.reservedSlots ?? 0, allocated_blocks: load?.reservedBlocks ?? 0 };
      });
    const stats = deps.requestStats?.() ?? { requestNum: deps.ledger.totals().active, inputLen: 0, outputLen: 0 };
    return c.json({
      schedule_info: scheduleInfo,
      request_num: stats.requestNum,
      request_length_info: { input_len: stats.inputLen, output_len: stats.outputLen },
      ...(stats.totals === undefined
        ? {}
        : {
            requests_total: stats.totals.requests,
            input_tokens_total: stats.totals.promptTokens,
            output_tokens_total: stats.totals.outputTokens,
          }),
    });
  });

  return app;
}

/**
 * A transfer record with wire names; timestamps are integer epoch milliseconds (null until reached).
 * @example recordWire(ledger.get('r1')!).p_blocks
 */
export function recordWire(record: TransferRecord): Record<string, unknown> {
  return {
    request_id: record.requestId,
    client_request_id: record.clientRequestId,
    p: record.p,
    d: record.d,
    slots: record.slots,
    p_blocks: record.pBlocks,
    d_blocks: record.dBlocks,
    decode_held: record.decodeHeld,
    state: record.state,
    code: record.code,
    detail: record.detail,
    bytes: record.bytes,
    blocks_moved: record.blocksMoved,
    lease_ms: record.leaseMs,
    deadline: millis(record.deadline),
    reserved_at: millis(record.reservedAt),
    prefilling_at: millis(record.prefillingAt),
    transferring_at: millis(record.transferringAt),
    ended_at: millis(record.endedAt),
  };
}

function totalsWire(totals: LedgerTotals): Record<string, number> {
  return {
    active: totals.active,
    reserved_slots: totals.reservedSlots,
    reserved_blocks: totals.reservedBlocks,
    bytes_moved: totals.bytesMoved,
    blocks_moved: totals.blocksMoved,
    done: totals.done,
    failed: totals.failed,
    expired: totals.expired,
    released: totals.released,
  };
}

function millis<T extends number | null>(value: T): T {
  return (value === null ? null : Math.round(value)) as T;
}
