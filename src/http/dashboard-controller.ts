/**
 * The controller's side of the topology page: instances and links as the control loop observes
 * them (each agent's status: linked peers, failed links with their LLM code, free slots and blocks),
 * and the loop's own activity as rates. The controller sees no requests, so its list of failures is
 * the instances' latest errors (role posts refused, heartbeats missed), and its standing notice is
 * the topology file's last load (a refused file is the one thing the cluster is not running).
 */
import type { Controller, ControllerEvents, MemberView } from '../controller/controller.ts';
import type { TopologyFileStatus } from '../controller/topology-file.ts';
import type { DashboardInstance, DashboardLink, DashboardNotice, DashboardSource } from './dashboard-state.ts';

/** States in which an instance answers nobody, so every link to it is down. */
const GONE = new Set(['down', 'unreachable']);

export interface ControllerSource extends DashboardSource {
  /** Feed these from the controller's events: every evaluation may have changed what the page shows. */
  readonly events: Required<Pick<ControllerEvents, 'rolePost' | 'snapshotPush' | 'evaluated'>>;
}

/**
 * A dashboard source over a controller (and its topology file, when it has one); wire `events` into the controller's own.
 * @example const source = controllerSource(() => controller); const controller = new Controller({ spec, events: source.events });
 */
export function controllerSource(
  controller: () => Controller,
  topologyFile: () => TopologyFileStatus | undefined = () => undefined,
): ControllerSource {
  const listeners = new Set<() => void>();
  const counts = { role_posts: 0, role_posts_failed: 0, snapshot_pushes: 0, snapshot_pushes_failed: 0 };
  const notify = () => {
    for (const listener of listeners) listener();
  };
  return {
    kind: 'controller',
    events: {
      rolePost(ok) {
        counts.role_posts++;
        if (!ok) counts.role_posts_failed++;
      },
      snapshotPush(ok) {
        counts.snapshot_pushes++;
        if (!ok) counts.snapshot_pushes_failed++;
      },
      evaluated: notify,
    },
    topology() {
      const members = controller().view().members;
      return { instances: members.map(instanceOf), links: memberLinks(members) };
    },
    counters() {
      return Object.fromEntries(Object.entries(counts).map(([name, total]) => [name, { unit: 'posts/s', total }]));
    },
    failures() {
      return controller()
        .view()
        .members.flatMap((m) =>
          m.lastError === undefined
            ? []
            : [{ at: m.lastError.at, subject: `instance ${m.id}`, instances: [m.id], reason: m.lastError.message }],
        )
        .sort((a, b) => b.at - a.at);
    },
    notices(): DashboardNotice[] {
      const file = topologyFile();
      if (file === undefined) return [];
      return [{ subject: `topology file ${file.path}`, message: file.message, ok: file.outcome === 'applied', at: file.readAt }];
    },
    watch(changed) {
      listeners.add(changed);
      return () => listeners.delete(changed);
    },
  };
}

function instanceOf(m: MemberView): DashboardInstance {
  const r = m.resources;
  const url = new URL(m.inferenceUrl);
  return {
    id: m.id,
    role: m.role,
    group: m.group,
    address: url.host,
    state: m.state,
    slots: r === undefined ? null : { free: r.availSlots, total: r.totalSlots },
    blocks: r === undefined ? null : { free: r.availBlocks, total: r.totalBlocks },
    inFlight: r === undefined ? 0 : Math.max(0, r.totalSlots - r.availSlots),
    circuit: 'none',
    lastError: m.lastError ?? null,
  };
}

/**
 * One link per desired P-D pair of a decode instance: failed when either side is gone or an agent
 * reports it failed (with its code), ok when the decode side holds it linked, linking otherwise.
 */
export function memberLinks(members: readonly MemberView[]): DashboardLink[] {
  const byId = new Map(members.map((m) => [m.id, m]));
  const links: DashboardLink[] = [];
  for (const d of members) {
    if (d.role !== 'decode') continue;
    for (const pId of d.desiredPeers) {
      const p = byId.get(pId);
      const gone = [d, p].find((m) => m === undefined || GONE.has(m.state));
      const code = d.failedLinks.get(pId) ?? p?.failedLinks.get(d.id);
      if (gone !== undefined)
        links.push({ p: pId, d: d.id, state: 'failed', code: `instance ${gone?.id ?? pId} ${gone?.state ?? 'removed'}` });
      else if (code !== undefined) links.push({ p: pId, d: d.id, state: 'failed', code });
      else if (d.linkedPeers.includes(pId)) links.push({ p: pId, d: d.id, state: 'ok', code: null });
      else links.push({ p: pId, d: d.id, state: 'linking', code: null });
    }
  }
  return links;
}
