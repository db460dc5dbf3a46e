/**
 * The prefill leg: "compute" the prompt (prefill_ms_per_token per token), write the prompt's
 * deterministic KV bytes into free blocks of one device's registered cache, keep those blocks
 * under a lease for the decoder, and answer with one generated token and `kv_transfer_params`
 * naming the blocks, this device's cluster id and where to say "done" (the management listener's
 * `POST /sim/kv/release`). The blocks are freed on that call or when the lease runs out.
 */
import { createHash } from 'node:crypto';
import { answerHead, usage, wholeAnswer } from '../http/openai.ts';
import { promptBlocks } from '../kv/kv-bytes.ts';
import { SIM_CACHE_ID } from '../kv/kv-port.ts';
import { finish } from '../request-log.ts';
import type { SimRequest } from './request.ts';
import { SimError } from '../http/sim-error.ts';
import { prefillMs } from '../timing.ts';
import { blocksNeeded, generatedToken, promptHash } from '../model/tokens.ts';
import type { LegEngine } from '../types.ts';

/**
 * Serves a request whose `kv_transfer_params` ask to keep the KV cache for a remote decoder.
 * @example return runPrefill(engine, request, requestId, signal);
 */
export async function runPrefill(engine: LegEngine, request: SimRequest, requestId: string, signal: AbortSignal): Promise<Response> {
  const { options } = engine;
  const record = engine.log.start({ requestId, kind: request.kind, leg: 'prefill', stream: false, promptTokens: request.tokens.length });
  const faulted = engine.faults.takePrefillStatus();
  if (faulted !== undefined) {
    const err = new SimError(
      faulted,
      `simulated fault: prefill answers ${faulted}`,
      faulted >= 500 ? 'InternalServerError' : 'BadRequestError',
    );
    finish(record, 'error', faulted, err.message);
    return err.toResponse(requestId);
  }
  // Only the tokens the prefix cache does not hold are computed (timing.ts).
  const cached = engine.prefixCache.admit(request.tokens, options.blockTokens);
  record.cachedTokens = cached;
  if (
    !(await engine.prefillQueue.run(
      prefillMs(request.tokens.length, cached, options.prefillMsPerToken) + engine.faults.takeStall(),
      signal,
    ))
  ) {
    finish(record, 'aborted', 499);
    return new Response(null, { status: 499 });
  }

  const device = engine.nextDevice();
  const pool = engine.pools.get(device.endpoint)!;
  const prefillId = engine.nextId(requestId);
  const count = blocksNeeded(request.tokens.length, options.blockTokens);
  const blocks = pool.allocate(prefillId, count, options.kvLeaseMs);
  if (blocks === undefined) {
    const err = SimError.server(503, `KV cache full: ${count} blocks needed, ${pool.free} free on device ${device.endpoint}`);
    finish(record, 'error', 503, err.message);
    return err.toResponse(requestId);
  }
  const hash = promptHash(request.tokens);
  try {
    if (count > 0) {
      const data = promptBlocks(hash, 0, count, options.blockBytes, engine.scratch.take(count * options.blockBytes));
      try {
        // The fault flips a byte after the real bytes were computed: the decoder must notice.
        if (engine.faults.takeCorruption()) data[data.length >>> 1] = data[data.length >>> 1]! ^ 0xff;
        await options.kv.write(device.endpoint, SIM_CACHE_ID, blocks, data);
      } finally {
        // The write has copied the bytes into the cache by the time it settles.
        engine.scratch.release(data);
      }
    }
  } catch (err) {
    pool.release(prefillId);
    const failure = SimError.server(500, `writing ${count} KV blocks failed: ${err instanceof Error ? err.message : String(err)}`);
    finish(record, 'error', 500, failure.message);
    return failure.toResponse(requestId);
  }
  if (signal.aborted) {
    pool.release(prefillId);
    finish(record, 'aborted', 499);
    return new Response(null, { status: 499 });
  }
  engine.noteExported(prefillId, device.endpoint);
  record.blocks = count;
  record.engineId = device.clusterId.toString();
  const notify = engine.notifyAddress;
  const kvTransferParams = {
    do_remote_prefill: true,
    do_remote_decode: false,
    remote_block_ids: [...blocks],
    remote_engine_id: device.clusterId.toString(),
    remote_request_id: prefillId,
    remote_host: notify?.host ?? '127.0.0.1',
    remote_port: notify?.port ?? 0,
    tp_size: 1,
  };
  const head = answerHead(request.kind, requestId, request.model);
  const body = JSON.stringify(wholeAnswer(head, generatedToken(hash, 0), 'length', usage(request.tokens.length, 1), kvTransferParams));
  record.completionTokens = 1;
  record.bytesSent = Buffer.byteLength(body);
  record.digest = createHash('sha256').update(body).digest('hex');
  finish(record, 'ok', 200);
  return new Response(body, { status: 200, headers: { 'content-type': 'application/json', 'x-request-id': requestId } });
}
