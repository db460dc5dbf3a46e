/**
 * `/v1/kv/*` on the instance agent's management listener: KV block caches on the device contexts,
 * local writes and reads (base64), and pulls/pushes over links. Runtime outcomes are status codes
 * in a 200 answer (`{ret, ret_name, ...}`), as on `/v1/links/*`; 400/422 only for requests that
 * are malformed or off-spec. A client that disconnects aborts its pull or push.
 */
import { Hono } from 'hono';
import { errors } from '../core/errors.ts';
import type { CallStatus, TransferResult, Transfers } from '../agent/transfers/transfers.ts';
import { SMALL_BODY_LIMIT_BYTES } from '../core/limits.ts';
import { clusterIdToWire, type IpPort } from '../links/endpoint.ts';
import {
  CacheIdSchema,
  MAX_BLOCKS_PER_REQUEST,
  MAX_COPY_BYTES,
  PullSchema,
  PushSchema,
  ReadBlocksSchema,
  RegisterCacheSchema,
  WriteBlocksSchema,
} from '../schema/blocks.ts';
import { parseOrRefuse, type Refusal } from '../schema/issues.ts';
import { LocalIpInfoSchema } from '../schema/links.ts';
import { onError } from './envelope.ts';
import { jsonBody } from './json-body.ts';

/** Pull/push bodies: two lists of up to 256 Ki indices (≤ 11 bytes each in JSON) and the rest. */
export const TRANSFER_BODY_LIMIT_BYTES = 2 * MAX_BLOCKS_PER_REQUEST * 11 + 64 * 1024;
/** Write bodies: base64 of MAX_COPY_BYTES, the block list, and the rest. */
export const WRITE_BODY_LIMIT_BYTES = Math.ceil(MAX_COPY_BYTES / 3) * 4 + MAX_BLOCKS_PER_REQUEST * 11 + 64 * 1024;

export interface BlockRouteDeps {
  readonly transfers: Transfers;
  /** Local endpoint for a request's `local_ip_info` (undefined: the default endpoint). */
  readonly endpointFor?: (local: IpPort | undefined) => string | undefined;
}

/**
 * Routes `POST /v1/kv/caches`, `GET /v1/kv/caches`, `DELETE /v1/kv/caches/:cache_id`,
 * `POST /v1/kv/write`, `POST /v1/kv/read`, `POST /v1/kv/pull`, `POST /v1/kv/push`, `GET /v1/kv/transfers`,
 * `GET /v1/kv/links`.
 * @example app.route('/', blockRoutes({ transfers: agent.transfers }));
 */
export function blockRoutes(deps: BlockRouteDeps): Hono {
  const app = new Hono();
  app.onError(onError);
  const t = deps.transfers;
  // An address that names no local device would silently use the default one: refuse it instead.
  const endpointOf = (local: IpPort | undefined, path = 'local_ip_info'): string | undefined => {
    if (local === undefined) return undefined;
    const endpoint = deps.endpointFor?.(local);
    if (endpoint === undefined) throw errors.unprocessable([{ path, message: `no local device has the address ${local.ip}` }]);
    return endpoint;
  };

  app.post('/v1/kv/caches', jsonBody(RegisterCacheSchema, { limitBytes: SMALL_BODY_LIMIT_BYTES }), async (c) => {
    const body = c.req.valid('json');
    const endpoint = endpointOf(body.local_ip_info);
    const result = await t.registerCache(endpoint, { cacheId: body.cache_id, numBlocks: body.num_blocks, blockBytes: body.block_bytes });
    return c.json({
      ...statusBody(result),
      cache_id: clusterIdToWire(body.cache_id),
      num_blocks: body.num_blocks,
      block_bytes: body.block_bytes,
    });
  });

  app.get('/v1/kv/caches', (c) =>
    c.json({
      caches: t
        .caches()
        .map((x) => ({ endpoint: x.endpoint, cache_id: clusterIdToWire(x.cacheId), num_blocks: x.numBlocks, block_bytes: x.blockBytes })),
    }),
  );

  app.delete('/v1/kv/caches/:cache_id', async (c) => {
    const id = parseOrRefuse(CacheIdSchema, c.req.param('cache_id'), firstIssueAt('cache_id'));
    const localText = c.req.query('local_ip_info');
    const local = localText === undefined ? undefined : parseOrRefuse(LocalIpInfoSchema, localText, firstIssueAt('local_ip_info'));
    return c.json(statusBody(await t.unregisterCache(endpointOf(local), id)));
  });

  app.post('/v1/kv/write', jsonBody(WriteBlocksSchema, { limitBytes: WRITE_BODY_LIMIT_BYTES }), async (c) => {
    const body = c.req.valid('json');
    const endpoint = endpointOf(body.local_ip_info);
    const result = await t.writeBlocks(endpoint, body.cache_id, body.blocks, decodeBase64(body.data));
    // The transfer API checks the length against the cache; a refused argument is the body's fault.
    if (result.refused !== undefined) throw errors.unprocessable([{ path: result.refused.field, message: result.refused.reason }]);
    return c.json(statusBody(result));
  });

  app.post('/v1/kv/read', jsonBody(ReadBlocksSchema, { limitBytes: TRANSFER_BODY_LIMIT_BYTES }), async (c) => {
    const body = c.req.valid('json');
    const endpoint = endpointOf(body.local_ip_info);
    const cache = t.caches().find((x) => x.cacheId === body.cache_id && (endpoint === undefined || x.endpoint === endpoint));
    if (cache !== undefined && body.blocks.length * cache.blockBytes > MAX_COPY_BYTES) {
      throw errors.unprocessable([
        {
          path: 'blocks',
          message: `reads at most ${MAX_COPY_BYTES} bytes per call (${Math.floor(MAX_COPY_BYTES / cache.blockBytes)} blocks of ${cache.blockBytes})`,
        },
      ]);
    }
    const result = await t.readBlocks(endpoint, body.cache_id, body.blocks);
    return c.json({
      ...statusBody(result),
      ...(result.data === undefined
        ? {}
        : { data: Buffer.from(result.data.buffer, result.data.byteOffset, result.data.byteLength).toString('base64') }),
    });
  });

  app.post('/v1/kv/pull', jsonBody(PullSchema, { limitBytes: TRANSFER_BODY_LIMIT_BYTES }), async (c) => {
    const body = c.req.valid('json');
    const result = await t.pullBlocks({
      ...optionalEndpoint(endpointOf(body.local_ip_info)),
      remoteClusterId: body.remote_cluster_id,
      remoteCacheId: body.remote_cache_id,
      srcBlocks: body.src_blocks,
      dstCacheId: body.dst_cache_id,
      dstBlocks: body.dst_blocks,
      timeoutMs: body.timeout,
      signal: c.req.raw.signal,
    });
    return c.json(transferBody(result));
  });

  app.post('/v1/kv/push', jsonBody(PushSchema, { limitBytes: TRANSFER_BODY_LIMIT_BYTES }), async (c) => {
    const body = c.req.valid('json');
    const result = await t.pushBlocks({
      ...optionalEndpoint(endpointOf(body.local_ip_info)),
      remoteClusterId: body.remote_cluster_id,
      srcCacheId: body.src_cache_id,
      srcBlocks: body.src_blocks,
      remoteCacheId: body.remote_cache_id,
      dstBlocks: body.dst_blocks,
      timeoutMs: body.timeout,
      signal: c.req.raw.signal,
    });
    return c.json(transferBody(result));
  });

  app.get('/v1/kv/transfers', (c) =>
    c.json({
      transfers: t.active().map((x) => ({
        id: x.id,
        op: x.op,
        endpoint: x.endpoint,
        remote_cluster_id: clusterIdToWire(x.remoteClusterId),
        blocks: x.blocks,
        blocks_done: x.blocksDone,
        in_runtime: x.inRuntime,
        started_at: new Date(x.startedAt).toISOString(),
      })),
    }),
  );
  // The runtime's view of the links: the path transfers take and how many run on each.
  app.get('/v1/kv/links', async (c) =>
    c.json({
      links: (await t.links()).map((l) => ({
        endpoint: l.endpoint,
        remote_cluster_id: clusterIdToWire(l.remoteClusterId),
        side: l.side,
        state: l.state,
        same_host: l.sameHost,
        transfers_in_flight: l.transfersInFlight,
      })),
    }),
  );
  return app;
}

/** A 422 naming `path` with the first issue of a path or query parameter (one value, one reason). */
function firstIssueAt(path: string): Refusal {
  return (issues) => errors.unprocessable([{ path, message: issues[0]?.message ?? 'invalid' }]);
}

const optionalEndpoint = (endpoint: string | undefined) => (endpoint === undefined ? {} : { endpoint });

/** Codes go out unsigned, as LLMStatusCode's values (LLM_FAILED = 4294967295). */
function statusBody(result: CallStatus) {
  return { ret: result.ret >>> 0, ret_name: result.retName, ...(result.message === undefined ? {} : { message: result.message }) };
}

function transferBody(result: TransferResult) {
  return { ...statusBody(result), bytes: result.bytes, blocks: result.blocks, ...(result.aborted ? { aborted: true } : {}) };
}

/** Decodes validated base64 straight into shared memory, the form the worker takes as it is. */
function decodeBase64(text: string): Uint8Array {
  const padding = text.endsWith('==') ? 2 : text.endsWith('=') ? 1 : 0;
  const out = new Uint8Array(new SharedArrayBuffer((text.length / 4) * 3 - padding));
  const written = Buffer.from(out.buffer, 0, out.byteLength).write(text, 'base64');
  return written === out.byteLength ? out : out.subarray(0, written);
}
