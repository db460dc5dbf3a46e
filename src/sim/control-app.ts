/**
 * The simulator's own routes, served on the management listener beside the instance agent's:
 * `POST|GET|DELETE /sim/faults` (arm, show, clear faults), `POST /sim/kv/release` (a decoder is
 * done with a prefill's blocks), `GET /sim/status` (counters, KV blocks in use) and
 * `GET /sim/requests[?request_id=]` (what each leg did, with the digest of its answer).
 */
import { Hono } from 'hono';
import * as v from 'valibot';
import { errors } from '../errors.ts';
import { readJsonBody } from '../http/body.ts';
import { onError } from '../http/envelope.ts';
import { toFieldIssues } from '../schema/issues.ts';
import type { SimEngine } from './engine.ts';
import { parseFaults } from './faults.ts';

const CONTROL_BODY_LIMIT_BYTES = 64 * 1024;

const ReleaseBody = v.object({ remote_request_id: v.pipe(v.string('must be a string'), v.minLength(1, 'must not be empty')) });

/**
 * Builds the `/sim/*` routes of one engine.
 * @example managementApp.route('/', simControlApp(engine));
 */
export function simControlApp(engine: SimEngine): Hono {
  const app = new Hono();
  app.onError(onError);
  app.post('/sim/faults', async (c) => {
    engine.faults.arm(parseFaults(await readJsonBody(c, { limitBytes: CONTROL_BODY_LIMIT_BYTES })));
    return c.json(engine.faults.toJSON());
  });
  app.get('/sim/faults', (c) => c.json(engine.faults.toJSON()));
  app.delete('/sim/faults', (c) => {
    engine.faults.clear();
    return c.json(engine.faults.toJSON());
  });
  app.post('/sim/kv/release', async (c) => {
    const parsed = v.safeParse(ReleaseBody, await readJsonBody(c, { limitBytes: CONTROL_BODY_LIMIT_BYTES }));
    if (!parsed.success) throw errors.unprocessable(toFieldIssues(parsed.issues));
    return c.json({ released_blocks: engine.releaseExport(parsed.output.remote_request_id) });
  });
  app.get('/sim/status', (c) => c.json(engine.stats()));
  app.get('/sim/requests', (c) => c.json({ requests: engine.log.list(c.req.query('request_id')) }));
  return app;
}
