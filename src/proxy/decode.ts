/**
 * The D leg: D gets the client's request with P's `kv_transfer_params`, and its answer goes back to
 * the client. The client's status line is written only once D has produced its first byte (the
 * whole body when not streaming), so any failure before that is still a clean 502/504 with an
 * error body — never a 200 with an empty or truncated body. A D that refused the connection or
 * answered 5xx hands the leg to another D of the same P (see decode-retry.ts).
 */
import type { Instance } from '../cluster/instance.ts';
import { errors, PdlinkError } from '../core/errors.ts';
import { nextDecode, refusedConnection } from './decode-retry.ts';
import type { Exchange, Prefilled } from './exchange.ts';
import { kvMovedOf } from './kv-report.ts';
import type { PickedPair } from './ports.ts';
import type { Stop } from './stop.ts';
import { decodeBody, engineUrl, legHeaders, legText } from './legs.ts';
import { relayStream, type ChunkReader } from './stream.ts';
import { sendLeg } from './send-leg.ts';
import { servedBy } from './served-by.ts';
import { firstChunk, passthrough, quoteError, streamHeaders, transportMessage } from './upstream.ts';

/** A D leg that failed before its first byte, P's blocks untouched: another D may take it. */
interface Retryable {
  readonly reason: 'refused' | 'status_5xx';
  /** Ends the exchange with this failure, when no other D takes the leg. */
  readonly stop: () => Stop;
}

/**
 * Runs the D leg of `exchange`, on another D of the same P when one fails before its first byte,
 * and returns the client's response; failures end the exchange and throw its Stop. `moveDecode`
 * moves the request's reservation to the D that takes over.
 * @example return await runDecode(exchange, prefilled, (d) => reservation.moveDecode(d, exchange.prompt.tokenCount));
 */
export async function runDecode(exchange: Exchange, prefilled: Prefilled, moveDecode: (d: Instance) => void): Promise<Response> {
  const failedD = new Set<number>();
  let pair = prefilled.pair;
  for (;;) {
    const outcome = await decodeLeg(exchange, prefilled, pair);
    if (outcome instanceof Response) return outcome;
    failedD.add(pair.d.id);
    const next =
      failedD.size <= exchange.deps.settings.maxRetries && exchange.cause === null
        ? nextDecode(exchange.deps.picker, pair, failedD, exchange.prompt, moveDecode)
        : undefined;
    if (next === undefined) throw outcome.stop();
    exchange.deps.metrics.decodeRetried(outcome.reason);
    pair = next;
  }
}

async function decodeLeg(exchange: Exchange, prefilled: Prefilled, pair: PickedPair): Promise<Response | Retryable> {
  const { kind, body, requestId, clientHeaders } = exchange.request;
  const { health, metrics } = exchange.deps;
  const d = pair.d.id;
  const sentAt = performance.now();

  const failWith = (message: string) => (): Stop => {
    const failure = errors.upstreamFailed(`decode instance ${d} ${message}`);
    return exchange.fail('upstream_failed', failure, { kind: 'fail', code: 'decode_failed', detail: failure.message });
  };
  const broken = (err: unknown, what: string) => {
    if (exchange.cause !== null) return exchange.stopForAbort(d);
    health?.recordFailure(d);
    return failWith(`${what}: ${transportMessage(err)}`)();
  };
  const refused = (message: string) => {
    health?.recordFailure(d);
    return failWith(message)();
  };

  // Serialised before D is asked, so that a body that cannot be sent is never counted against D.
  let legBody: string;
  try {
    legBody = legText(decodeBody(body, prefilled.kvTransferParams));
  } catch (err) {
    const failure = err instanceof PdlinkError ? err : errors.internal(err);
    throw exchange.fail('invalid', failure, { kind: 'fail', code: 'invalid_request', detail: failure.message });
  }
  let res: Response;
  try {
    res = await sendLeg(
      engineUrl(pair.d, kind, exchange.deps.settings.engineTls !== undefined),
      legHeaders(clientHeaders, requestId),
      legBody,
      exchange.signal,
      exchange.deps.origins,
      () => metrics.staleRetried('decode'),
      exchange.deps.settings.engineIdleTimeoutMs,
      exchange.deps.settings.engineTls,
    );
  } catch (err) {
    if (exchange.cause === null && refusedConnection(err)) {
      health?.recordFailure(d);
      return { reason: 'refused', stop: failWith(`could not be reached: ${transportMessage(err)}`) };
    }
    throw broken(err, 'could not be reached');
  }
  const contentType = res.headers.get('content-type');

  if (res.status < 200 || res.status >= 300) {
    let text: string;
    try {
      text = await res.text();
    } catch (err) {
      throw broken(err, `answered ${res.status}, then failed`);
    }
    if (res.status >= 400 && res.status < 500) {
      // D judged the request itself: its answer is the client's answer, and D is healthy.
      health?.recordSuccess(d);
      exchange.end('upstream_rejected', { kind: 'fail', code: 'decode_rejected', detail: `decode instance ${d} answered ${res.status}` });
      return servedBy(passthrough(res.status, contentType, text, requestId), pair);
    }
    if (res.status >= 500) {
      health?.recordFailure(d);
      return { reason: 'status_5xx', stop: failWith(`answered ${res.status}: ${quoteError(text)}`) };
    }
    throw refused(`answered ${res.status}: ${quoteError(text)}`);
  }

  if (!exchange.streaming) {
    let bytes: ArrayBuffer;
    try {
      bytes = await res.arrayBuffer();
    } catch (err) {
      throw broken(err, 'failed while answering');
    }
    if (bytes.byteLength === 0) throw refused(`answered ${res.status} with an empty body`);
    health?.recordSuccess(d);
    metrics.decode((performance.now() - sentAt) / 1000);
    exchange.end('ok', { kind: 'complete', ...kvMovedOf(res.headers) });
    return servedBy(passthrough(res.status, contentType, bytes, requestId), pair);
  }

  const reader: ChunkReader | undefined = res.body?.getReader();
  if (reader === undefined) throw refused(`answered ${res.status} with an empty body`);
  let first: Uint8Array | null;
  try {
    first = await firstChunk(reader);
  } catch (err) {
    throw broken(err, 'failed before its first byte');
  }
  if (first === null) throw refused(`answered ${res.status} with an empty body`);
  exchange.firstByte();
  const firstAt = performance.now();
  metrics.transfer((firstAt - prefilled.answeredAt) / 1000);

  const stream = relayStream(
    first,
    reader,
    {
      onEnd() {
        health?.recordSuccess(d);
        metrics.decode((performance.now() - firstAt) / 1000);
        exchange.end('ok', { kind: 'complete', ...kvMovedOf(res.headers) });
      },
      onError(err) {
        const cause = exchange.cause;
        if (cause === 'client_abort') {
          exchange.end('client_abort', { kind: 'release' });
          return null;
        }
        health?.recordFailure(d);
        const failure =
          cause !== null
            ? exchange.timeoutError(cause, d)
            : errors.upstreamFailed(`decode instance ${d} failed mid-stream: ${transportMessage(err)}`);
        exchange.end(cause !== null ? 'timeout' : 'stream_failed', {
          kind: 'fail',
          code: cause !== null ? 'timeout' : 'decode_failed',
          detail: failure.message,
        });
        return failure;
      },
      onCancel() {
        exchange.abort('client_abort');
        exchange.end('client_abort', { kind: 'release' });
      },
    },
    isEventStream(contentType),
  );
  return servedBy(new Response(stream, { status: res.status, headers: streamHeaders(res, requestId) }), pair);
}

function isEventStream(contentType: string | null): boolean {
  return contentType !== null && contentType.split(';', 1)[0]!.trim().toLowerCase() === 'text/event-stream';
}
