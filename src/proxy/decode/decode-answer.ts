/**
 * D's successful answer going back to the client, whole or streamed. The client's status line is
 * written only once D has produced its first byte (the whole body when not streaming), so any
 * failure before that is still a clean 502/504 with an error body; a stream that fails later ends
 * with the error its relay writes (see stream.ts).
 */
import { errors } from '../../core/errors.ts';
import type { DecodeFailures } from './decode-failures.ts';
import { kvMovedOf } from '../../core/kv-report.ts';
import { legReader, readLegBytes } from '../legs/idle.ts';
import { relayStream, type ChunkReader } from './stream.ts';
import type { DecodeExchange, Prefilled } from '../exchange/types.ts';
import type { LegAnswer } from '../../platform/platform.ts';
import { firstChunk, passthrough, streamHeaders, transportMessage } from '../legs/upstream.ts';
import { UnusableAnswer } from '../legs/unusable-answer.ts';

/** One 2xx answer of D: the response, where it came from, and when the leg was sent. */
export interface DecodeAnswer {
  readonly res: LegAnswer;
  readonly d: number;
  readonly sentAt: number;
  readonly fails: DecodeFailures;
}

/**
 * Reads D's whole answer and passes it on; failures end the exchange and throw its Stop.
 * @example return await wholeAnswer(exchange, { res, d, sentAt, fails });
 */
export async function wholeAnswer(exchange: DecodeExchange, answer: DecodeAnswer): Promise<Response> {
  const { res, d, sentAt, fails } = answer;
  const { breakers, metrics } = exchange.deps;
  let bytes: Uint8Array;
  try {
    bytes = await readLegBytes(res, exchange.deps.settings.maxAnswerBytes);
  } catch (err) {
    if (exchange.cause === null && err instanceof UnusableAnswer) throw fails.refused(err.message);
    throw fails.broken(err, 'failed while answering');
  }
  if (bytes.byteLength === 0) throw fails.refused(`answered ${res.status} with an empty body`);
  breakers?.recordSuccess(d);
  metrics.decode((performance.now() - sentAt) / 1000);
  exchange.end('ok', { kind: 'complete', ...kvMovedOf(res.headers) });
  return passthrough(res.status, res.headers.get('content-type'), bytes, exchange.request.requestId);
}

/**
 * Waits for D's first byte, then relays the rest as it comes; the exchange settles when the stream
 * ends, fails or is cancelled. Failures before the first byte end the exchange and throw its Stop.
 * @example return await streamedAnswer(exchange, prefilled, { res, d, sentAt, fails });
 */
export async function streamedAnswer(exchange: DecodeExchange, prefilled: Prefilled, answer: DecodeAnswer): Promise<Response> {
  const { res, d, fails } = answer;
  const { metrics } = exchange.deps;
  const reader: ChunkReader | undefined = legReader(res);
  if (reader === undefined) throw fails.refused(`answered ${res.status} with an empty body`);
  let first: Uint8Array | null;
  try {
    first = await firstChunk(reader);
  } catch (err) {
    throw fails.broken(err, 'failed before its first byte');
  }
  if (first === null) throw fails.refused(`answered ${res.status} with an empty body`);
  exchange.firstByte();
  const firstAt = performance.now();
  metrics.transfer((firstAt - prefilled.answeredAt) / 1000);

  return relayDecodeStream(exchange, { res, reader, first, d, firstAt });
}

/** What relayDecodeStream needs of a D answer whose first byte has arrived. */
export interface DecodeStream {
  readonly res: LegAnswer;
  readonly reader: ChunkReader;
  readonly first: Uint8Array;
  readonly d: number;
  readonly firstAt: number;
  /** Called first when the relay fails (e.g. to drop a leg still running beside D). */
  readonly onFailure?: () => void;
}

/**
 * Relays the rest of D's stream to the client and settles the exchange when it ends, fails
 * mid-stream (an SSE error event, D charged unless the client left) or is cancelled by the client.
 * @example return relayDecodeStream(exchange, { res, reader, first, d, firstAt });
 */
export function relayDecodeStream(exchange: DecodeExchange, stream: DecodeStream): Response {
  const { res, reader, first, d, firstAt, onFailure } = stream;
  const { breakers, metrics } = exchange.deps;
  const body = relayStream(
    first,
    reader,
    {
      onEnd() {
        breakers?.recordSuccess(d);
        metrics.decode((performance.now() - firstAt) / 1000);
        exchange.end('ok', { kind: 'complete', ...kvMovedOf(res.headers) });
      },
      onError(err) {
        onFailure?.();
        const cause = exchange.cause;
        if (cause === 'client_abort') {
          exchange.end('client_abort', { kind: 'release' });
          return null;
        }
        breakers?.recordFailure(d);
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
    isEventStream(res.headers.get('content-type')),
  );
  return new Response(body, { status: res.status, headers: streamHeaders(res, exchange.request.requestId) });
}

function isEventStream(contentType: string | null): boolean {
  if (contentType === null) return false;
  // What engines send, recognised without building strings; any other spelling is parsed.
  if (contentType === 'text/event-stream' || contentType.startsWith('text/event-stream;')) return true;
  return contentType.split(';', 1)[0]!.trim().toLowerCase() === 'text/event-stream';
}
