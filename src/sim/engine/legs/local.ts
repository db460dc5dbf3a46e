/**
 * A request served by one engine alone (no `kv_transfer_params`, or ones asking for nothing):
 * prefill the prompt locally, then generate, as a non-disaggregated engine would.
 */
import { answer } from './answer.ts';
import { joinBatch } from './generating.ts';
import { prefillMs } from '../timing.ts';
import { finish } from '../request-log.ts';
import type { SimRequest } from './request.ts';
import { promptHash } from '../model/tokens.ts';
import type { LegEngine } from '../types.ts';

/**
 * Serves a request without a remote KV cache.
 * @example return runLocal(engine, request, requestId, signal);
 */
export async function runLocal(engine: LegEngine, request: SimRequest, requestId: string, signal: AbortSignal): Promise<Response> {
  const { options } = engine;
  const record = engine.log.start({
    requestId,
    kind: request.kind,
    leg: 'local',
    stream: request.stream,
    promptTokens: request.tokens.length,
  });
  // A decoder prefilling locally reuses what its prefix cache holds, pulled or computed before.
  const cached = engine.prefixCache.admit(request.tokens, options.blockTokens);
  record.cachedTokens = cached;
  if (!(await engine.prefillQueue.run(prefillMs(request.tokens.length, cached, options.prefillMsPerToken), signal))) {
    finish(record, 'aborted', 499);
    return new Response(null, { status: 499 });
  }
  const seat = joinBatch(engine);
  return answer({
    request,
    requestId,
    hash: promptHash(request.tokens),
    decodeMsPerToken: options.decodeMsPerToken,
    tokenMs: seat.tokenMs,
    record,
    signal,
    crashAfter: undefined,
    crash: () => {},
    onEnd: seat.leave,
  });
}
