/**
 * Sends one request of a workload and records what its client saw: status, the time of every
 * token-carrying chunk, the usage count, the error, and the instances that served it (pdlink's
 * response headers). The clock is injected so the arithmetic can be checked on scripted time.
 */
import { chunkContent, SseReader } from './sse.ts';
import { DECODE_HEADER, endpointUrl, PREFILL_HEADER, requestBody, type Target } from './target.ts';
import { PRIORITY_HEADER, TENANT_HEADER } from './tenants.ts';
import { timingsOf } from './timing.ts';

export type Outcome = 'ok' | 'error' | 'cut';

export interface RequestRecord {
  readonly index: number;
  readonly requestId: string;
  /** When the workload asked for it to be sent (open loop), in ms from the run's start; null in a closed loop. */
  readonly scheduledMs: number | null;
  readonly sentMs: number;
  /** sentMs − scheduledMs: how late the harness sent it. */
  readonly driftMs: number | null;
  readonly inputTokens: number;
  /** Completion tokens asked for. */
  readonly maxTokens: number;
  /** Completion tokens received (the server's usage count, else token chunks). */
  readonly outputTokens: number;
  /** HTTP status; 0 when no response arrived. */
  readonly status: number;
  /** `cut` when the run's time bound or a signal ended it before it finished. */
  readonly outcome: Outcome;
  readonly error: string | null;
  readonly ttftMs: number | null;
  readonly tpotMs: number | null;
  readonly e2eMs: number;
  readonly itlMs: number[];
  /** Instance ids from pdlink's `x-pdlink-prefill` / `x-pdlink-decode` headers; null from other servers. */
  readonly prefill: string | null;
  readonly decode: string | null;
  /** The tenant it was sent as (`--tenants`), else null. */
  readonly tenant: string | null;
}

export interface SendOptions {
  readonly target: Target;
  readonly index: number;
  readonly requestId: string;
  readonly prompt: string;
  readonly inputTokens: number;
  readonly maxTokens: number;
  readonly scheduledMs: number | null;
  /** ms since the run started. */
  readonly now: () => number;
  /** Aborts the request as cut (time bound, signal). */
  readonly cut: AbortSignal;
  /** Called after each token-carrying chunk has been timed. */
  readonly onToken?: () => void;
  /** Sent as pdlink's tenant and class headers. */
  readonly tenant?: string | undefined;
  readonly priority?: string | undefined;
}

/**
 * Sends the request and resolves with its record; never rejects.
 * @example const record = await sendRequest({ target, index: 0, requestId: 'bench-0', prompt, ... });
 */
export async function sendRequest(options: SendOptions): Promise<RequestRecord> {
  const { target, now } = options;
  const timeout = AbortSignal.timeout(target.requestTimeoutMs);
  const signal = AbortSignal.any([options.cut, timeout]);
  const sentMs = now();
  const tokenTimes: number[] = [];
  let status = 0;
  let prefill: string | null = null;
  let decode: string | null = null;
  let chunkTokens = 0;
  let usageTokens: number | undefined;
  let error: string | null = null;
  let done = false;
  try {
    const res = await fetch(endpointUrl(target), {
      method: 'POST',
      headers: identityHeaders(options, {
        'content-type': 'application/json',
        'x-request-id': options.requestId,
        accept: 'text/event-stream',
      }),
      body: JSON.stringify(requestBody(target, options.prompt, options.maxTokens)),
      signal,
    });
    status = res.status;
    prefill = res.headers.get(PREFILL_HEADER);
    decode = res.headers.get(DECODE_HEADER);
    if (!res.ok || res.body === null) {
      error = `HTTP ${res.status}: ${errorMessage(await res.text())}`;
    } else {
      const reader = new SseReader();
      for await (const bytes of res.body) {
        const at = now();
        for (const data of reader.push(bytes)) {
          if (data === '[DONE]') {
            done = true;
            continue;
          }
          const content = chunkContent(data);
          if (content.error !== undefined) error ??= content.error;
          if (content.completionTokens !== undefined) usageTokens = content.completionTokens;
          if (content.text !== '') {
            tokenTimes.push(at);
            chunkTokens++;
            options.onToken?.();
          }
        }
      }
      if (error === null && !done) error = 'stream ended without [DONE]';
    }
  } catch (err) {
    error = options.cut.aborted
      ? 'cut: the run ended first'
      : timeout.aborted
        ? `timed out after ${target.requestTimeoutMs} ms`
        : err instanceof Error
          ? err.message
          : String(err);
  }
  const endMs = now();
  const outputTokens = usageTokens ?? chunkTokens;
  const timings = timingsOf(sentMs, tokenTimes, outputTokens, endMs);
  const outcome = error === null ? 'ok' : options.cut.aborted && !done ? 'cut' : 'error';
  return {
    index: options.index,
    requestId: options.requestId,
    scheduledMs: options.scheduledMs,
    sentMs,
    driftMs: options.scheduledMs === null ? null : sentMs - options.scheduledMs,
    inputTokens: options.inputTokens,
    maxTokens: options.maxTokens,
    outputTokens,
    status,
    outcome,
    error,
    ...timings,
    prefill,
    decode,
    tenant: options.tenant ?? null,
  };
}

/** The request's headers with its tenant and class, when it has them. */
function identityHeaders(options: SendOptions, headers: Record<string, string>): Record<string, string> {
  if (options.tenant !== undefined) headers[TENANT_HEADER] = options.tenant;
  if (options.priority !== undefined) headers[PRIORITY_HEADER] = options.priority;
  return headers;
}

/** An OpenAI-style `error.message` when the body has one, else the body's start. */
function errorMessage(text: string): string {
  try {
    const parsed = JSON.parse(text) as { error?: { message?: unknown } | string; message?: unknown };
    const message = typeof parsed.error === 'string' ? parsed.error : (parsed.error?.message ?? parsed.message);
    if (typeof message === 'string') return message;
  } catch {
    // not JSON: quote the text
  }
  return text.slice(0, 200);
}
