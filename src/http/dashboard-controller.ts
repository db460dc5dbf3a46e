/**
 * The controller's side of the topology page: instances and links as the control loop observes
 * them (each agent's status: linked peers, failed links with their LLM code, free slots and blocks),
 * and the loop's own activity as rates. The controller sees no requests, so its list of failures is
 * the instances' latest errors (role posts refused, heartbeats missed), and its standing notices are
 * the topology file's last load (a refused file is the one thing the cluster is not running) and the
 * planner's decisions and moves.
 */
import type { Controller, ControllerEvents, MemberView } from '../controller/controller.ts';
import type { TopologyFileStatus } from '../controller/topology-file.ts';
import type { PlannerView } from '../controller/planner/planner.ts';
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
  planner: () => PlannerView | undefined = () => undefined,
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
      const view = planner();
      return [
        ...(file === undefined
          ? []
          : [{ subject: `topology file ${file.path}`, message: file.message, ok: file.outcome === 'applied', at: file.readAt }]),
        ...(view === undefined ? [] : plannerNotices(view, controller().moves, Date.now())),
      ];
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

/** Decisions an operator should look at: a move, or a move that could not be made. */
const NOTABLE = new Set(['move', 'refused', 'none_movable', 'at_minimum', 'donor_busy', 'no_request_totals']);
/** An ended move stays on the page this long. */
const RECENT_MOVE_MS = 10 * 60_000;

/**
 * The planner's lines on the page: its mode and each group's last decision (the notable ones, or a
 * count of the quiet ones), the move under way, and the last move if it ended lately.
 * @example plannerNotices(planner.view(), controller.moves, Date.now())
 */
export function plannerNotices(view: PlannerView, moves: Controller['moves'], now: number): DashboardNotice[] {
  if (view.settings.mode === 'off') return [];
  const subject = `planner (${view.settings.mode})`;
  const notices: DashboardNotice[] = [];
  const notable = view.groups.filter((g) => g.decision !== undefined && NOTABLE.has(g.decision.code));
  for (const g of notable.slice(0, 4)) {
    const d = g.decision!;
    notices.push({ subject: `${subject}, group ${g.group}`, message: `${d.code}: ${d.reason}`, ok: d.code === 'move', at: d.at });
  }
  const quiet = view.groups.length - notable.length;
  if (!view.acting) notices.push({ subject, message: 'standing by (another controller leads)', ok: true, at: now });
  else if (quiet > 0 || view.groups.length === 0) {
    const latest = view.groups.find((g) => g.decision !== undefined && !NOTABLE.has(g.decision.code))?.decision;
    const message = latest === undefined ? 'no decision yet' : `${quiet} group(s) ${latest.code}: ${latest.reason}`;
    notices.push({ subject, message, ok: true, at: latest?.at ?? now });
  }
  const move = moves.current;
  if (move !== undefined) {
    notices.push({
      subject: `move of instance ${move.id}`,
      message: `${move.from} → ${move.to} (${move.by}): ${move.phase} for ${Math.round((now - move.since) / 1000)} s; ${move.reason}`,
      ok: true,
      at: move.since,
    });
  }
  const last = moves.history[0];
  if (move === undefined && last?.ended !== undefined && now - last.ended < RECENT_MOVE_MS) {
    notices.push({
      subject: `move of instance ${last.id}`,
      message: `${last.from} → ${last.to} (${last.by}) ${last.outcome ?? 'done'} after ${((last.ended - last.since) / 1000).toFixed(1)} s`,
      ok: last.outcome === 'done',
      at: last.ended,
    });
  }
  return notices;
}
