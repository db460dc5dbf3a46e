/**
 * The simulated engine's inference listener, OpenAI-compatible like vLLM's server:
 * `POST /v1/completions`, `POST /v1/chat/completions`, `GET /v1/models`, `GET /health`.
 */
import { Hono, type Context } from 'hono';
import { PdlinkError } from '../../../core/errors.ts';
import { readJsonRequest } from '../../../web/json-request.ts';
import { methodAwareNotFound } from '../../../web/route-methods.ts';
import type { SimEngine } from '../engine.ts';
import type { SimKind } from '../legs/request.ts';
import { SimError } from './sim-error.ts';
import { serveSglang } from '../legs/sglang.ts';

/** Largest accepted request body (vLLM has no limit of its own; 16 MiB covers long prompts). */
export const SIM_BODY_LIMIT_BYTES = 16 * 1024 * 1024;

/**
 * Builds the inference app of one engine.
 * @example Bun.serve({ port: 0, fetch: simInferenceApp(engine).fetch });
 */
export function simInferenceApp(engine: SimEngine): Hono {
  const app = new Hono();
  const serve = async (c: Context, kind: SimKind): Promise<Response> => {
    const requestId = c.req.header('x-request-id') ?? crypto.randomUUID();
    let body: unknown;
    try {
      body = await readJsonRequest(c.req.raw, { limitBytes: SIM_BODY_LIMIT_BYTES });
    } catch (err) {
      if (err instanceof PdlinkError) return new SimError(err.status, err.message, 'BadRequestError').toResponse(requestId);
      throw err;
    }
    // A stream's gaps may outlast the listener's idle timeout; the engine paces it, not the socket.
    const server = c.env as { timeout?: (request: Request, seconds: number) => void } | undefined;
    if (typeof server?.timeout === 'function') server.timeout(c.req.raw, 0);
    const response =
      engine.options.protocol === 'sglang'
        ? await serveSglang(engine, kind, body, requestId, c.req.raw.signal)
        : await engine.handle(kind, body, requestId, c.req.raw.signal);
    const traceparent = c.req.header('traceparent');
    // The leg's record was started by handle(): the newest of this id not yet given a traceparent.
    if (traceparent !== undefined) {
      const record = engine.log.list(requestId).findLast((r) => r.traceparent === null);
      if (record !== undefined) record.traceparent = traceparent;
    }
    return response;
  };
  app.post('/v1/completions', (c) => serve(c, 'completions'));
  app.post('/v1/chat/completions', (c) => serve(c, 'chat'));
  app.get('/v1/models', (c) =>
    c.json({
      object: 'list',
      data: [{ id: engine.options.model, object: 'model', created: 0, owned_by: 'pdlink-sim', max_model_len: engine.options.maxModelLen }],
    }),
  );
  // Not healthy while a role switch runs: it would refuse the request the check stands for.
  app.get('/health', (c) => c.body(null, engine.roleSwitch.switchingTo === undefined ? 200 : 503));
  app.notFound(
    methodAwareNotFound(app, {
      notFound: (c) => new SimError(404, `no route ${c.req.method} ${c.req.path}`, 'NotFoundError').toResponse(),
      methodNotAllowed: (c, allow) =>
        new SimError(
          405,
          `${c.req.method} is not served on ${c.req.path}; it serves ${allow.join(', ')}`,
          'MethodNotAllowedError',
        ).toResponse(),
    }),
  );
  app.onError((err) => {
    console.error('pdlink sim-engine: inference route failed', err);
    return SimError.server(500, 'internal error').toResponse();
  });
  return app;
}
