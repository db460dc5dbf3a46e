/**
 * The decode leg: pull the prompt's blocks named by P's `kv_transfer_params` over the link to P's
 * device into free local blocks, read them back and verify every byte against the prompt's
 * deterministic contents, tell P it may free its blocks, then generate. Any failure before the
 * first byte is a 5xx with a clear message (a failed pull names the runtime's status code; a
 * verification failure names the block and byte), never a 200 with wrong output.
 */
import { answer } from './answer.ts';
import { joinBatch } from './generating.ts';
import { verifyBlocks } from '../kv/kv-bytes.ts';
import { SIM_CACHE_ID } from '../kv/kv-port.ts';
import { finish, type RequestRecord } from '../request-log.ts';
import type { KvIntent, SimRequest } from './request.ts';
import { SimError } from '../http/sim-error.ts';
import { blocksNeeded, promptHash } from '../model/tokens.ts';
import type { LegEngine } from '../types.ts';

type Import = Extract<KvIntent, { kind: 'import' }>;

/**
 * Serves a request carrying a prefiller's `kv_transfer_params`.
 * @example return runDecode(engine, request, request.kv, requestId, signal);
 */
export async function runDecode(
  engine: LegEngine,
  request: SimRequest,
  kv: Import,
  requestId: string,
  signal: AbortSignal,
): Promise<Response> {
  const { options } = engine;
  const record = engine.log.start({
    requestId,
    kind: request.kind,
    leg: 'decode',
    stream: request.stream,
    promptTokens: request.tokens.length,
  });
  record.engineId = kv.engineId.toString();
  // P keeps the blocks only until the decoder is done with them, whatever the outcome; a lost
  // notice is covered by P's lease.
  let told = false;
  const done = (): void => {
    if (told) return;
    told = true;
    if (options.notifyDone !== undefined) options.notifyDone(kv.host, kv.port, kv.remoteRequestId).catch(() => {});
    else engine.releases.notify(kv.host, kv.port, kv.remoteRequestId);
  };
  const fail = (err: SimError): Response => {
    done();
    finish(record, 'error', err.status, err.message);
    return err.toResponse(requestId);
  };
  const faulted = engine.faults.takeDecodeStatus();
  if (faulted !== undefined)
    return fail(
      new SimError(faulted, `simulated fault: decode answers ${faulted}`, faulted >= 500 ? 'InternalServerError' : 'BadRequestError'),
    );
  const crashAfter = engine.faults.takeCrash();

  const count = blocksNeeded(request.tokens.length, options.blockTokens);
  if (kv.blockIds.length !== count) {
    return fail(
      SimError.badRequest(
        `kv_transfer_params.remote_block_ids: names ${kv.blockIds.length} blocks, the prompt fills ${count} of ${options.blockTokens} tokens`,
        'kv_transfer_params.remote_block_ids',
      ),
    );
  }
  const hash = promptHash(request.tokens);
  const localId = engine.nextId(requestId);
  let release = (): void => {};
  if (count > 0) {
    const endpoint = options.kv.linkedEndpoint(kv.engineId);
    if (endpoint === undefined) return fail(SimError.server(503, `no link to prefill engine ${kv.engineId}: cannot pull its KV blocks`));
    const pool = engine.pools.get(endpoint)!;
    const local = pool.allocate(localId, count);
    if (local === undefined)
      return fail(SimError.server(503, `KV cache full: ${count} blocks needed, ${pool.free} free on device ${endpoint}`));
    release = () => void pool.release(localId);
    const problem = await pullAndVerify(engine, record, { endpoint, local, kv, count, hash, signal });
    if (problem !== undefined) {
      release();
      if (problem === 'aborted') {
        done();
        finish(record, 'aborted', 499);
        return new Response(null, { status: 499 });
      }
      return fail(problem);
    }
  }
  done();
  // The pulled blocks are this engine's now: a later local prefill of the same prefix reuses them.
  engine.prefixCache.hold(request.tokens, options.blockTokens);
  const seat = joinBatch(engine);
  return answer({
    request,
    requestId,
    hash,
    decodeMsPerToken: options.decodeMsPerToken,
    tokenMs: seat.tokenMs,
    record,
    signal,
    crashAfter,
    crash: options.crash ?? crashProcess,
    onEnd: () => {
      seat.leave();
      release();
    },
  });
}

interface PullPlan {
  readonly endpoint: string;
  readonly local: Uint32Array;
  readonly kv: Import;
  readonly count: number;
  readonly hash: ReturnType<typeof promptHash>;
  readonly signal: AbortSignal;
}

async function pullAndVerify(engine: LegEngine, record: RequestRecord, plan: PullPlan): Promise<SimError | 'aborted' | undefined> {
  const { options } = engine;
  const started = performance.now();
  let result;
  try {
    result = await options.kv.pull({
      endpoint: plan.endpoint,
      remoteClusterId: plan.kv.engineId,
      remoteCacheId: SIM_CACHE_ID,
      srcBlocks: Uint32Array.from(plan.kv.blockIds),
      dstCacheId: SIM_CACHE_ID,
      dstBlocks: plan.local,
      timeoutMs: options.pullTimeoutMs,
      signal: plan.signal,
    });
  } catch (err) {
    if (plan.signal.aborted) return 'aborted';
    return SimError.server(
      500,
      `pulling ${plan.count} KV blocks from prefill engine ${plan.kv.engineId} failed: ${err instanceof Error ? err.message : String(err)}`,
    );
  }
  if (plan.signal.aborted) return 'aborted';
  record.pullMs = performance.now() - started;
  if (result.ret !== 0) {
    return SimError.server(500, `pulling ${plan.count} KV blocks from prefill engine ${plan.kv.engineId} failed: ${result.retName}`);
  }
  record.blocks = plan.count;
  record.bytesPulled = result.bytes;
  engine.counters.bytesPulled += result.bytes;
  engine.counters.blocksPulled += plan.count;
  const pulled = await options.kv.read(plan.endpoint, SIM_CACHE_ID, plan.local, options.blockBytes);
  const mismatch = verifyBlocks(plan.hash, 0, pulled, options.blockBytes);
  record.verified = mismatch === undefined;
  if (mismatch === undefined) return undefined;
  engine.counters.verifyFailures++;
  return SimError.server(
    500,
    `KV verification failed: block ${mismatch.block} (remote block ${plan.kv.blockIds[mismatch.block]}) byte ${mismatch.offset} is 0x${hex(mismatch.actual)}, the prompt's cache holds 0x${hex(mismatch.expected)}`,
  );
}

function crashProcess(): void {
  process.kill(process.pid, 'SIGKILL');
}

function hex(byte: number): string {
  return byte.toString(16).padStart(2, '0');
}
