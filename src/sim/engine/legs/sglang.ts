/**
 * The simulated engine speaking SGLang's PD protocol (`--protocol sglang`): both legs arrive at
 * once with the same `bootstrap_host`, `bootstrap_port` and `bootstrap_room`. P prefills as
 * usual, files its blocks under the room and answers its leg once D has taken them; D asks P's
 * bootstrap server (P's management listener, `GET /sim/bootstrap/{room}`) for the room, waiting
 * until P filed it, then pulls and verifies the bytes over the runtime link and generates, as on
 * the vLLM path (prefill.ts, decode.ts do the work).
 */
import { UnsafeInteger } from '../../../core/exact-json.ts';
import type { SimEngine } from '../engine.ts';
import type { SimKind } from './request.ts';
import { SimError } from '../http/sim-error.ts';

/** How long D waits for P to file a room (P may still be computing the prompt). */
export const ROOM_WAIT_MS = 30_000;

const BOOTSTRAP_FIELDS = ['bootstrap_host', 'bootstrap_port', 'bootstrap_room'] as const;

/**
 * Serves a request of an SGLang router; a request without bootstrap fields is an ordinary one.
 * @example return serveSglang(engine, 'completions', body, requestId, signal);
 */
export async function serveSglang(
  engine: SimEngine,
  kind: SimKind,
  body: unknown,
  requestId: string,
  signal: AbortSignal,
): Promise<Response> {
  if (typeof body !== 'object' || body === null || Array.isArray(body) || !('bootstrap_room' in body)) {
    return engine.handle(kind, body, requestId, signal);
  }
  const fields = body as Record<string, unknown>;
  const host = fields['bootstrap_host'];
  const port = fields['bootstrap_port'];
  const room = fields['bootstrap_room'];
  if (Array.isArray(room)) return serveBatch(engine, kind, fields, requestId, signal);
  if (typeof host !== 'string' || host === '')
    return SimError.badRequest('bootstrap_host: must be a host name', 'bootstrap_host').toResponse(requestId);
  if (typeof port !== 'number' || !Number.isInteger(port)) {
    return SimError.badRequest('bootstrap_port: must be an integer port', 'bootstrap_port').toResponse(requestId);
  }
  const roomId =
    room instanceof UnsafeInteger
      ? room.source
      : typeof room === 'number' && Number.isInteger(room) && room >= 0
        ? String(room)
        : undefined;
  if (roomId === undefined)
    return SimError.badRequest('bootstrap_room: must be a non-negative integer', 'bootstrap_room').toResponse(requestId);
  const rest: Record<string, unknown> = { ...fields };
  for (const key of BOOTSTRAP_FIELDS) delete rest[key];
  return engine.role === 'prefill'
    ? prefillRoom(engine, kind, rest, roomId, requestId, signal)
    : decodeRoom(engine, kind, rest, { host, port, room: roomId }, requestId, signal);
}

/**
 * A batched prompt: one room per item, each item served as its own request at once. P answers the
 * list of its items' answers (as SGLang's batch API does); D answers one completion with a choice
 * per item. Streaming a batch is not simulated.
 */
async function serveBatch(
  engine: SimEngine,
  kind: SimKind,
  fields: Record<string, unknown>,
  requestId: string,
  signal: AbortSignal,
): Promise<Response> {
  const rooms = fields['bootstrap_room'] as unknown[];
  const prompts = fields['prompt'];
  const hosts = fields['bootstrap_host'];
  const ports = fields['bootstrap_port'];
  const n = rooms.length;
  if (kind !== 'completions' || !Array.isArray(prompts) || prompts.length !== n || typeof prompts[0] === 'number') {
    return SimError.badRequest(`prompt: a batch of ${n} rooms needs a list of ${n} prompts`, 'prompt').toResponse(requestId);
  }
  if (!Array.isArray(hosts) || hosts.length !== n || !Array.isArray(ports) || ports.length !== n) {
    return SimError.badRequest(`bootstrap_host, bootstrap_port: must be lists of ${n} like bootstrap_room`, 'bootstrap_host').toResponse(
      requestId,
    );
  }
  if (fields['stream'] === true) return SimError.badRequest('stream: a streamed batch is not simulated', 'stream').toResponse(requestId);
  const answers = await Promise.all(
    rooms.map((room, i) =>
      serveSglang(
        engine,
        kind,
        { ...fields, prompt: prompts[i], bootstrap_host: hosts[i], bootstrap_port: ports[i], bootstrap_room: room },
        `${requestId}/${i}`,
        signal,
      ),
    ),
  );
  const failed = answers.find((res) => res.status !== 200);
  if (failed !== undefined) return failed;
  const bodies = (await Promise.all(answers.map((res) => res.json()))) as Record<string, unknown>[];
  if (engine.role === 'prefill') return Response.json(bodies, { headers: { 'x-request-id': requestId } });
  const choices = bodies.map((body, index) => ({ ...(body['choices'] as Record<string, unknown>[])[0], index }));
  const usage = (key: string) => bodies.reduce((sum, body) => sum + (((body['usage'] as Record<string, number>) ?? {})[key] ?? 0), 0);
  return Response.json(
    {
      ...bodies[0],
      choices,
      usage: { prompt_tokens: usage('prompt_tokens'), completion_tokens: usage('completion_tokens'), total_tokens: usage('total_tokens') },
    },
    { headers: { 'x-request-id': requestId } },
  );
}

async function prefillRoom(
  engine: SimEngine,
  kind: SimKind,
  body: Record<string, unknown>,
  room: string,
  requestId: string,
  signal: AbortSignal,
): Promise<Response> {
  const leg: Record<string, unknown> = {
    ...body,
    stream: false,
    max_tokens: 1,
    kv_transfer_params: { do_remote_decode: true, do_remote_prefill: false },
  };
  for (const key of ['stream_options', 'min_tokens', 'max_completion_tokens']) delete leg[key];
  const res = await engine.handle(kind, leg, requestId, signal);
  if (res.status !== 200) return res;
  const answer = (await res.json()) as Record<string, unknown>;
  const kv = answer['kv_transfer_params'] as Record<string, unknown>;
  delete answer['kv_transfer_params'];
  const prefillId = String(kv['remote_request_id']);
  // SGLang's P answers once its KV is handed over; the lease bounds a decoder that never comes.
  const handedOver = engine.rooms.fill(room, kv, prefillId);
  let timer: ReturnType<typeof setTimeout> | undefined;
  const ended = await Promise.race([
    handedOver.then(() => 'taken' as const),
    new Promise<'aborted'>((resolve) => signal.addEventListener('abort', () => resolve('aborted'), { once: true })),
    new Promise<'expired'>((resolve) => (timer = setTimeout(() => resolve('expired'), engine.options.kvLeaseMs))),
  ]);
  clearTimeout(timer);
  engine.rooms.drop(room);
  if (ended !== 'taken') engine.releaseExport(prefillId);
  if (ended === 'aborted') return new Response(null, { status: 499 });
  if (body['return_logprob'] === true) {
    const promptTokens = ((answer['usage'] as { prompt_tokens?: number } | undefined)?.prompt_tokens ?? 0) | 0;
    answer['meta_info'] = { input_token_logprobs: Array.from({ length: promptTokens }, (_, i) => [-(i % 7) / 8, i]) };
  }
  return Response.json(answer, { headers: { 'x-request-id': requestId } });
}

async function decodeRoom(
  engine: SimEngine,
  kind: SimKind,
  body: Record<string, unknown>,
  boot: { host: string; port: number; room: string },
  requestId: string,
  signal: AbortSignal,
): Promise<Response> {
  const url = `http://${boot.host.includes(':') ? `[${boot.host}]` : boot.host}:${boot.port}/sim/bootstrap/${boot.room}`;
  let kv: unknown;
  try {
    const res = await fetch(url, { signal });
    if (res.status !== 200) throw new Error(`answered ${res.status}: ${(await res.text()).slice(0, 200)}`);
    kv = await res.json();
  } catch (err) {
    if (signal.aborted) return new Response(null, { status: 499 });
    const why = err instanceof Error ? err.message : String(err);
    return SimError.server(500, `bootstrap room ${boot.room} at ${boot.host}:${boot.port} could not be had: ${why}`).toResponse(requestId);
  }
  const res = await engine.handle(kind, { ...body, kv_transfer_params: kv }, requestId, signal);
  if (body['return_logprob'] !== true || body['stream'] === true || res.status !== 200) return res;
  // The prompt's logprobs are P's: D's own list is empty, for the router to fill in.
  const answer = (await res.json()) as Record<string, unknown>;
  answer['meta_info'] = { input_token_logprobs: [] };
  return Response.json(answer, { headers: res.headers });
}
