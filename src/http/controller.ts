/**
 * The controller's own API on its management listener: `GET /v1/cluster` (desired topology,
 * Coordinators, per-instance state and last error, the topology file's last load),
 * `POST /v1/cluster/instances` (add one instance: the topology file's entry),
 * `DELETE /v1/cluster/instances/{id}` (drain, then remove), `POST /v1/cluster/reload` (read the
 * topology file again), `POST /v1/cluster/instances/{id}/role` (move it to another role:
 * controller-planner.ts). 400: request errors (content type, malformed JSON, a bad id or `force`);
 * 422: an entry off the schema or unlike the cluster's instances; 409: an id, address or device
 * already taken, or a removal past the guard; 404: no such instance. A refused change changes nothing.
 */
import { Hono } from 'hono';
import type { ControllerView, Controller, MemberView } from '../controller/controller.ts';
import type { LeadershipView } from '../controller/leadership.ts';
import type { TopologyFileStatus } from '../controller/topology-file.ts';
import type { DesiredInstance } from '../controller/types.ts';
import { errors, PdlinkError, type FieldIssue } from '../core/errors.ts';
import { CONTROLLER_BODY_LIMIT_BYTES } from '../core/limits.ts';
import { AddInstanceBody, ForceParam, InstanceIdParam } from '../schema/controller-api.ts';
import { parseOrRefuse } from '../schema/issues.ts';
import { onError } from './envelope.ts';
import { jsonBody } from './json-body.ts';
import { moveRoutes, moveWire, plannerWire } from './controller-planner.ts';
import type { PlannerView } from '../controller/planner/planner.ts';

export { CONTROLLER_BODY_LIMIT_BYTES };

export interface ControllerRouteDeps {
  readonly controller: Controller;
  /** The entry resolved as the topology file would resolve it (static defaults, rank table devices). */
  readonly resolve: (entry: AddInstanceBody) => { ok: true; instance: DesiredInstance } | { ok: false; issues: FieldIssue[] };
  /** Leader or standby (several controllers on one store); absent: the only controller, always leading. */
  readonly leadership?: () => LeadershipView | undefined;
  /** The topology file's last load; absent or undefined: the controller runs without a file. */
  readonly topologyFile?: () => TopologyFileStatus | undefined;
  /** Reads the topology file again and applies it (`force`: past the mass-removal guard). */
  readonly reload?: (options: { readonly force: boolean }) => TopologyFileStatus;
  /** The P:D planner's state (absent: no planner, shown as null). */
  readonly planner?: () => PlannerView;
}

const ALONE: LeadershipView = { state: 'leader', leader: undefined, store: 'memory', storeConnected: true };

/**
 * Routes of the controller API.
 * @example app.route('/', controllerRoutes({ controller, resolve }));
 */
export function controllerRoutes(deps: ControllerRouteDeps): Hono {
  const app = new Hono();
  app.onError(onError);

  const leadership = (): LeadershipView => deps.leadership?.() ?? ALONE;
  app.get('/v1/cluster', (c) => {
    const file = deps.topologyFile?.();
    return c.json({
      ...clusterWire(deps.controller.view()),
      leadership: leadershipWire(leadership()),
      topology_file: file === undefined ? null : fileWire(file),
      planner: deps.planner === undefined ? null : plannerWire(deps.planner(), deps.controller.moves),
    });
  });

  // A standby changes nothing: the leader's address is in the answer, for the caller to go there.
  const leaderOnly = async (_c: unknown, next: () => Promise<void>): Promise<void> => {
    const view = leadership();
    if (view.state !== 'leader') {
      throw errors.unavailable(`this controller is a standby; the leader is ${view.leader ?? 'not elected yet'}: send changes there`);
    }
    await next();
  };
  app.post('/v1/cluster/instances', leaderOnly);
  app.delete('/v1/cluster/instances/:id', leaderOnly);
  app.post('/v1/cluster/reload', leaderOnly);
  app.post('/v1/cluster/instances/:id/role', leaderOnly);
  app.route('/', moveRoutes(deps.controller));

  app.post('/v1/cluster/instances', jsonBody(AddInstanceBody, { limitBytes: CONTROLLER_BODY_LIMIT_BYTES, object: true }), (c) => {
    const resolved = deps.resolve(c.req.valid('json'));
    if (!resolved.ok) throw errors.unprocessable(resolved.issues);
    deps.controller.add(resolved.instance);
    const view = deps.controller.view().members.find((m) => m.id === resolved.instance.id);
    return c.json(view === undefined ? { id: resolved.instance.id } : memberWire(view), 201);
  });

  app.delete('/v1/cluster/instances/:id', (c) => {
    const id = parseOrRefuse(InstanceIdParam, c.req.param('id'), (issues) => errors.invalidArgument('id', issues[0]!.message));
    const force = forceOf(c.req.query('force'));
    // The drain runs on; GET /v1/cluster shows it until the instance is gone.
    deps.controller.remove(id, { force }).catch(() => {});
    return c.json({ id, state: 'draining' }, 202);
  });

  app.post('/v1/cluster/reload', (c) => {
    const force = forceOf(c.req.query('force'));
    if (deps.reload === undefined) throw errors.conflictWith('this controller runs without a topology file', 'path');
    const status = deps.reload({ force });
    if (status.outcome === 'refused')
      throw new PdlinkError('conflict', `topology file ${status.path} ${status.message}`, {
        issues: status.issues.length > 0 ? status.issues : [{ path: '', message: status.message }],
      });
    return c.json(fileWire(status));
  });

  return app;
}

function forceOf(query: string | undefined): boolean {
  return parseOrRefuse(ForceParam, query, (issues) => errors.invalidArgument('force', issues[0]!.message)) === 'true';
}

function fileWire(f: TopologyFileStatus): Record<string, unknown> {
  const change = f.change;
  return {
    path: f.path,
    read_at: iso(f.readAt),
    outcome: f.outcome,
    message: f.message,
    issues: f.issues,
    change:
      change === undefined
        ? null
        : { added: change.added, removed: change.removed, updated: change.updated, drains_cancelled: change.drainsCancelled },
  };
}

function iso(at: number | undefined): string | null {
  return at === undefined ? null : new Date(at).toISOString();
}

function memberWire(m: MemberView): Record<string, unknown> {
  return {
    id: m.id,
    role: m.role,
    group_id: m.group,
    state: m.state,
    reachable: m.reachable,
    last_seen_at: iso(m.lastSeenAt),
    role_status: m.roleStatus ?? null,
    desired_peers: m.desiredPeers,
    linked_peers: m.linkedPeers,
    in_snapshot: m.inSnapshot,
    last_error: m.lastError === undefined ? null : { message: m.lastError.message, at: iso(m.lastError.at) },
    move: m.move === undefined ? null : moveWire(m.move),
    // What keeps the planner off it: an operator's pin, or a role the topology file fixes.
    pinned: m.move?.pinned === true ? 'operator' : m.roleFixed ? 'file' : null,
  };
}

function leadershipWire(view: LeadershipView): Record<string, unknown> {
  return { state: view.state, leader: view.leader ?? null, store: view.store, store_connected: view.storeConnected };
}

function clusterWire(view: ControllerView): Record<string, unknown> {
  const t = view.timing;
  return {
    desired: {
      coordinators: view.coordinators.map((c) => c.url),
      timing: {
        cluster_synchronization_seconds: t.syncMs / 1000,
        role_retry_seconds: t.roleRetryMs / 1000,
        instance_heartbeat_timeout_seconds: t.heartbeatTimeoutMs / 1000,
        status_poll_seconds: t.statusPollMs / 1000,
        http_timeout_seconds: t.httpTimeoutMs / 1000,
        drain_timeout_seconds: t.drainTimeoutMs / 1000,
      },
      timing_defaults: view.timingDefaults ?? null,
      default_p_rate: view.rates.p,
      default_d_rate: view.rates.d,
      max_removed_fraction: view.maxRemovedFraction,
      instances: view.desired.map((i) => ({
        id: i.id,
        manage_url: i.manageUrl,
        inference_url: i.inferenceUrl,
        model_name: i.modelName,
        server_ip: i.serverIp,
        devices: i.devices.map((d) => ({ device_logical_id: d.logicalId, device_ip: d.ip })),
        role: i.role ?? null,
        static_info: {
          max_seq_len: i.staticInfo.maxSeqLen,
          max_output_len: i.staticInfo.maxOutputLen,
          total_slots_num: i.staticInfo.totalSlots,
          total_block_num: i.staticInfo.totalBlocks,
          block_size: i.staticInfo.blockSize,
        },
      })),
    },
    observed: {
      snapshot_ids: view.snapshotIds,
      coordinators: view.coordinators.map((c) => ({
        url: c.url,
        reachable: c.reachable,
        last_push_at: iso(c.lastPushAt),
        last_error: c.lastError === undefined ? null : { message: c.lastError.message, at: iso(c.lastError.at) },
      })),
    },
    instances: view.members.map(memberWire),
  };
}
