/**
 * What a simulated engine remembers of the requests it served, for tests and the demo: the
 * request id each leg carried, what the engine did with the KV cache, and a SHA-256 digest of the
 * exact bytes it answered, so a test can prove the client got exactly what the engine produced.
 */

export type Leg = 'prefill' | 'decode' | 'local';

export interface RequestRecord {
  readonly requestId: string;
  readonly kind: 'completions' | 'chat';
  readonly leg: Leg;
  readonly stream: boolean;
  readonly promptTokens: number;
  completionTokens: number;
  status: number;
  /** `ok`, `aborted` (the caller went away), `error`, or `running`. */
  outcome: 'running' | 'ok' | 'aborted' | 'error';
  /** KV blocks written (prefill) or pulled (decode). */
  blocks: number;
  /** Bytes pulled over the link (decode). */
  bytesPulled: number;
  /** Pull time in milliseconds (decode). */
  pullMs: number;
  /** Prompt tokens the prefix cache already held (prefill and local legs). */
  cachedTokens: number;
  /** True when every pulled byte matched the prompt's blocks (decode legs that pulled). */
  verified: boolean | null;
  /** The prefiller's cluster id (decode) or this engine's device cluster id holding the blocks (prefill). */
  engineId: string | null;
  /** Hex SHA-256 of the answered body bytes, once the answer is complete. */
  digest: string | null;
  bytesSent: number;
  error: string | null;
  /** The W3C `traceparent` the leg carried, if any (a traced proxy sends one per leg). */
  traceparent: string | null;
  readonly startedAt: number;
  endedAt: number | null;
}

/** Records kept; older ones are dropped first. */
export const REQUEST_LOG_CAPACITY = 4096;

export class RequestLog {
  readonly #records: RequestRecord[] = [];
  readonly #capacity: number;

  constructor(capacity = REQUEST_LOG_CAPACITY) {
    this.#capacity = capacity;
  }

  /**
   * Starts a record; the caller fills it in as the request goes.
   * @example const rec = log.start({ requestId, kind: 'chat', leg: 'decode', stream: true, promptTokens: 12 });
   */
  start(head: Pick<RequestRecord, 'requestId' | 'kind' | 'leg' | 'stream' | 'promptTokens'>): RequestRecord {
    const record: RequestRecord = {
      ...head,
      completionTokens: 0,
      status: 200,
      outcome: 'running',
      blocks: 0,
      bytesPulled: 0,
      pullMs: 0,
      cachedTokens: 0,
      verified: null,
      engineId: null,
      digest: null,
      bytesSent: 0,
      error: null,
      traceparent: null,
      startedAt: Date.now(),
      endedAt: null,
    };
    this.#records.push(record);
    if (this.#records.length > this.#capacity) this.#records.shift();
    return record;
  }

  /**
   * Records, newest last, optionally only those of one request id.
   * @example log.list('req-1')
   */
  list(requestId?: string): readonly RequestRecord[] {
    return requestId === undefined ? [...this.#records] : this.#records.filter((r) => r.requestId === requestId);
  }
}

/**
 * Marks a record finished.
 * @example finish(rec, 'ok', 200);
 */
export function finish(record: RequestRecord, outcome: 'ok' | 'aborted' | 'error', status: number, error?: string): void {
  if (record.outcome !== 'running') return;
  record.outcome = outcome;
  record.status = status;
  record.endedAt = Date.now();
  if (error !== undefined) record.error = error;
}
