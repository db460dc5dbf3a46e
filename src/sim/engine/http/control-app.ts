/**
 * The simulator's own routes, served on the management listener beside the instance agent's:
 * `POST|GET|DELETE /sim/faults` (arm, show, clear faults), `POST /sim/kv/release` (a decoder is
 * done with prefills' blocks: `remote_request_id` or a batch in `remote_request_ids`), `GET /sim/status` (counters, KV blocks in use) and
 * `GET /sim/requests[?request_id=]` (what each leg did, with the digest of its answer).
 */
import { Hono, type Context } from 'hono';
import * as v from 'valibot';
import { asPdlinkError, errorBody } from '../../../web/error-body.ts';
import { errors } from '../../../core/errors.ts';
import { readJsonRequest } from '../../../web/json-request.ts';
import { SMALL_BODY_LIMIT_BYTES } from '../../../core/limits.ts';
import { parseOrRefuse } from '../../../schema/issues.ts';
import type { SimEngine } from '../engine.ts';
import { parseFaults } from '../faults.ts';
import { ROOM_WAIT_MS } from '../legs/sglang.ts';

const RequestId = v.pipe(v.string('must be a string'), v.minLength(1, 'must not be empty'));
/** One id, or a batch of them (what a decoder's ReleaseNotifier sends). */
const ReleaseBody = v.union(
  [
    v.object({ remote_request_id: RequestId }),
    v.object({
      remote_request_ids: v.pipe(v.array(RequestId, 'must be an array of request ids'), v.maxLength(100_000, 'at most 100000 ids')),
    }),
  ],
  'must carry remote_request_id or remote_request_ids',
);

/**
 * Builds the `/sim/*` routes of one engine.
 * @example managementApp.route('/', simControlApp(engine));
 */
export function simControlApp(engine: SimEngine): Hono {
  const app = new Hono();
  app.onError(renderError);
  app.post('/sim/faults', async (c) => {
    engine.faults.arm(parseFaults(await readJsonRequest(c.req.raw, { limitBytes: SMALL_BODY_LIMIT_BYTES })));
    return c.json(engine.faults.toJSON());
  });
  app.get('/sim/faults', (c) => c.json(engine.faults.toJSON()));
  app.delete('/sim/faults', (c) => {
    engine.faults.clear();
    return c.json(engine.faults.toJSON());
  });
  app.post('/sim/kv/release', async (c) => {
    const body = parseOrRefuse(ReleaseBody, await readJsonRequest(c.req.raw, { limitBytes: SMALL_BODY_LIMIT_BYTES }), errors.unprocessable);
    const ids = 'remote_request_ids' in body ? body.remote_request_ids : [body.remote_request_id];
    return c.json({ released_blocks: ids.reduce((n, id) => n + engine.releaseNotice(id), 0) });
  });
  // SGLang's bootstrap server: a decoder waits here until this prefiller filed the room.
  app.get('/sim/bootstrap/:room', async (c) => {
    const kv = await engine.rooms.wait(c.req.param('room'), ROOM_WAIT_MS, c.req.raw.signal);
    if (kv === undefined) throw errors.notFound(`bootstrap room ${c.req.param('room')} (waited ${ROOM_WAIT_MS} ms)`);
    return c.json(kv);
  });
  app.get('/sim/status', (c) => c.json(engine.stats()));
  app.get('/sim/requests', (c) => c.json({ requests: engine.log.list(c.req.query('request_id')) }));
  return app;
}

/** pdlink's error envelope; an error of the simulator itself is logged, the client sees only a 500. */
function renderError(err: Error, c: Context): Response {
  const known = asPdlinkError(err);
  if (known.code === 'internal') console.error('pdlink sim-engine: control route failed', err);
  return c.json(errorBody(known), known.status);
}
