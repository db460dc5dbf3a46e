/**
 * Liveness, startup and readiness probes, and the Prometheus scrape endpoint.
 * Liveness and startup answer 200 while the process serves; readiness answers 503 until the
 * supplied check passes (the Coordinator: at least one prefill and one decode instance).
 */
import { Hono } from 'hono';
import type { Registry } from 'prom-client';
import { errors } from '../core/errors.ts';
import { onError } from './envelope.ts';

export interface ProbeDeps {
  /** Why the service is not ready, or undefined when it is. */
  notReadyReason: () => string | undefined;
  metrics: Registry;
}

/**
 * Routes `/v1/startup`, `/v1/health`, `/v2/health/live`, `/v1/readiness`, `/v2/health/ready`, `/metrics`.
 * @example app.route('/', probeRoutes({ notReadyReason: () => undefined, metrics }));
 */
export function probeRoutes(deps: ProbeDeps): Hono {
  const app = new Hono();
  app.onError(onError);
  const alive = (): Response => Response.json({ status: 'ok' });
  app.get('/v1/startup', alive);
  app.get('/v1/health', alive);
  app.get('/v2/health/live', alive);
  const ready = (): Response => {
    const reason = deps.notReadyReason();
    if (reason !== undefined) throw errors.notReady(reason);
    return Response.json({ status: 'ready' });
  };
  app.get('/v1/readiness', ready);
  app.get('/v2/health/ready', ready);
  app.get('/metrics', async () => {
    const body = await deps.metrics.metrics();
    return new Response(body, { headers: { 'content-type': deps.metrics.contentType } });
  });
  return app;
}
