/**
 * Mooncake Conductor's Indexer API on the Coordinator's management listener, at Mooncake's own
 * paths, so a router written for the Conductor can use pdlink as its indexer: `POST /register` and
 * `POST /unregister` (a KV-event publisher to follow or drop), `POST /query` (cached prefix of token
 * ids, per tenant, instance, medium and DP rank), `POST /query_by_hash` (the same for precomputed
 * rolling sequence hashes) and `GET /global_view` (every publisher, its stream and what it holds).
 * An `instance_id` that is a refresh id is that instance for routing; any other name is indexed for
 * the API alone. Bodies are checked like every management route's (422 naming the field).
 */
import { Hono } from 'hono';
import { errors } from '../core/errors.ts';
import { SMALL_BODY_LIMIT_BYTES } from '../core/limits.ts';
import type { KvEventIntake } from '../kv-events/intake.ts';
import { prefixReport } from '../kv/prefix-report.ts';
import { MAX_QUERY_TOKENS, QueryBody, QueryByHashBody, RegisterBody, UnregisterBody } from '../schema/conductor.ts';
import { onError } from './envelope.ts';
import { jsonBody } from './json-body.ts';

const DEFAULT_TENANT = 'default';
/** A query carries up to a million token ids: room for them as JSON. */
const QUERY_BODY_LIMIT_BYTES = MAX_QUERY_TOKENS * 12;

/**
 * The Conductor routes over an intake.
 * @example managementApp.route('/', conductorRoutes(intake));
 */
export function conductorRoutes(intake: KvEventIntake): Hono {
  const app = new Hono();
  app.onError(onError);
  const state = intake.state;

  app.post('/register', jsonBody(RegisterBody, { limitBytes: SMALL_BODY_LIMIT_BYTES }), (c) => {
    const b = c.req.valid('json');
    intake.add({
      instance: b.instance_id,
      dpRank: b.dp_rank,
      tenant: b.tenant_id || DEFAULT_TENANT,
      model: b.modelname,
      blockSize: b.block_size,
      lora: b.lora_name ?? '',
      salt: b.additionalsalt ?? '',
      endpoint: b.endpoint,
      ...(b.replay_endpoint === undefined ? {} : { replayEndpoint: b.replay_endpoint }),
      origin: 'conductor',
    });
    return c.json({ status: 'registered successfully', instance_id: b.instance_id });
  });

  app.post('/unregister', jsonBody(UnregisterBody, { limitBytes: SMALL_BODY_LIMIT_BYTES }), (c) => {
    const b = c.req.valid('json');
    const tenant = b.tenant_id || DEFAULT_TENANT;
    const source = state.sourceId(b.instance_id, tenant, b.dp_rank);
    if (source === undefined || !intake.remove(source))
      throw errors.notFound(`publisher ${b.instance_id} (tenant ${tenant}, dp_rank ${b.dp_rank})`);
    return c.json({ status: 'unregistered successfully', removed_instances: [`${b.instance_id}|${tenant}|${b.dp_rank}`] });
  });

  app.post('/query', jsonBody(QueryBody, { limitBytes: QUERY_BODY_LIMIT_BYTES }), (c) => {
    const b = c.req.valid('json');
    const blocks = Math.floor(b.token_ids.length / b.block_size);
    const keys = new Uint32Array(2 * Math.max(1, blocks));
    state.hasher.keys(b.token_ids, b.block_size, keys, undefined, 'token_ids');
    const ns = state.namespace(b.model, b.block_size, b.lora_name ?? '', b.cache_salt ?? '', false);
    return c.json(prefixReport(state, ns, keys, blocks, scopeOf(b)));
  });

  app.post('/query_by_hash', jsonBody(QueryByHashBody, { limitBytes: SMALL_BODY_LIMIT_BYTES * 4 }), (c) => {
    const b = c.req.valid('json');
    const hashes = b.seq_hashes ?? b.block_hash ?? [];
    const keys = new Uint32Array(2 * Math.max(1, hashes.length));
    hashes.forEach((h, i) => {
      const value = BigInt(h);
      keys[2 * i] = Number(value >> 32n);
      keys[2 * i + 1] = Number(value & 0xffffffffn);
    });
    const ns = state.namespace(b.model, b.block_size, b.lora_name ?? '', b.cache_salt ?? '', false);
    return c.json(prefixReport(state, ns, keys, hashes.length, scopeOf(b)));
  });

  app.get('/global_view', (c) => {
    const view: Record<string, Record<string, unknown>> = {};
    for (const p of intake.views()) {
      const tenant = (view[p.spec.tenant] ??= {});
      const instance = (tenant[p.spec.instance] ??= { model: p.spec.model, block_size: p.spec.blockSize, dp_ranks: {} }) as {
        dp_ranks: Record<string, unknown>;
      };
      instance.dp_ranks[String(p.spec.dpRank)] = {
        endpoint: p.spec.endpoint,
        replay_endpoint: p.spec.replayEndpoint ?? null,
        origin: p.spec.origin,
        connected: p.connected,
        last_seq: p.lastSeq ?? null,
        batches: {
          applied: p.applied,
          replayed: p.replayed,
          duplicate: p.duplicates,
          malformed: p.malformed,
          oversize: p.oversize,
          bad_frames: p.badFrames,
        },
        gaps: p.gaps,
        disconnects: p.disconnects,
        resets: p.resets,
        blocks: {
          stored: p.blocks.stored,
          removed: p.blocks.removed,
          orphan: p.blocks.orphans,
          refused_full: p.blocks.full,
          unknown_removal: p.blocks.unknownRemovals,
        },
        last_error: p.lastError ?? null,
      };
    }
    return c.json({
      index: { held_blocks: state.index.held, distinct_blocks: state.index.blocks, bytes: state.index.bytes },
      tenants: view,
    });
  });

  return app;
}

function scopeOf(b: { tenant_id?: string | undefined; instance_id?: string | undefined; block_size: number }) {
  return { tenant: b.tenant_id || DEFAULT_TENANT, instance: b.instance_id || undefined, blockSize: b.block_size };
}
