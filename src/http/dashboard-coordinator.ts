/**
 * The Coordinator's side of the topology page: instances and links as the registry holds them
 * (the peers each instance reported), load from the ledger, health from the circuit breakers,
 * and the requests the ledger saw fail. It reads the same objects the APIs serve, so the page and
 * `GET /v1/instances` / `GET /v1/transfers` never disagree.
 */
import type { ClusterRegistry } from '../cluster/registry.ts';
import type { KvLedger } from '../ledger/index.ts';
import type { CircuitBreakers } from '../scheduler/index.ts';
import type { AdmissionSnapshot } from '../admission/index.ts';
import type { KvEventIntake } from '../kv-events/intake.ts';
import type {
  DashboardAdmission,
  DashboardKvEvents,
  DashboardFailure,
  DashboardInstance,
  DashboardLink,
  DashboardSource,
} from './dashboard-state.ts';

/** Failed requests kept for the page. */
const RECENT_FAILURES = 20;
/** Waiting tenants shown per class. */
const TENANTS_SHOWN = 10;

export interface CoordinatorSourceParts {
  readonly registry: ClusterRegistry;
  readonly ledger: KvLedger;
  readonly health: CircuitBreakers;
  /** Admission, when it is on: the page shows its queue and the stages' room. */
  readonly admission?: { snapshot(): AdmissionSnapshot };
  /** The KV-event intake and the topology entries it could not use: the page shows each stream. */
  readonly kv?: { readonly intake: KvEventIntake; readonly problems: ReadonlyMap<number, string> };
}

/**
 * A dashboard source over the Coordinator's core objects; `close()` stops following the ledger.
 * @example const feed = new DashboardFeed(coordinatorSource({ registry, ledger, health }));
 */
export function coordinatorSource(parts: CoordinatorSourceParts): DashboardSource & { close(): void } {
  const { registry, ledger, health } = parts;
  const failures: DashboardFailure[] = [];
  const lastErrors = new Map<number, { message: string; at: number }>();
  let reservations = 0;
  const listeners = new Set<() => void>();
  const notify = () => {
    for (const listener of listeners) listener();
  };
  const offLedger = ledger.onRecord(({ record, from }) => {
    if (from === null) reservations++;
    if (record.state === 'failed' || record.state === 'expired') {
      const at = record.endedAt ?? Date.now();
      const reason = record.detail === null ? (record.code ?? record.state) : `${record.code ?? record.state}: ${record.detail}`;
      failures.unshift({ at, subject: record.clientRequestId ?? record.requestId, instances: [record.p, record.d], reason });
      failures.length = Math.min(failures.length, RECENT_FAILURES);
      for (const id of chargedTo(record.code, record.p, record.d)) lastErrors.set(id, { message: reason, at });
    }
    notify();
  });

  return {
    kind: 'coordinator',
    topology() {
      const snapshot = ledger.snapshot();
      const loads = new Map(snapshot.instances.map((l) => [l.id, l]));
      const inFlight = new Map<number, number>();
      for (const r of snapshot.active) for (const id of new Set([r.p, r.d])) inFlight.set(id, (inFlight.get(id) ?? 0) + 1);
      const all = registry.all();
      const instances = all.map((i): DashboardInstance => ({
        id: i.id,
        role: i.role,
        group: i.groupId,
        address: `${i.ip}:${i.port}`,
        state: 'registered',
        slots: { free: loads.get(i.id)?.availSlots ?? i.availSlots, total: i.totalSlots },
        blocks: { free: loads.get(i.id)?.availBlocks ?? i.availBlocks, total: i.totalBlocks },
        inFlight: inFlight.get(i.id) ?? 0,
        circuit: health.state(i.id),
        lastError: lastErrors.get(i.id) ?? null,
      }));
      return { instances, links: registryLinks(registry) };
    },
    counters() {
      const totals = ledger.totals();
      return {
        requests: { unit: 'req/s', total: reservations },
        failures: { unit: 'req/s', total: totals.failed + totals.expired },
        kv_bytes: { unit: 'B/s', total: totals.bytesMoved },
      };
    },
    failures: () => [...failures],
    admission: (): DashboardAdmission | null => {
      if (parts.admission === undefined) return null;
      const { inFlight, queued, queuedBytes, classes, stages } = parts.admission.snapshot();
      return { inFlight, queued, queuedBytes, classes: classes.map((c) => ({ ...c, tenants: c.tenants.slice(0, TENANTS_SHOWN) })), stages };
    },
    kvEvents: (): DashboardKvEvents | null => (parts.kv === undefined ? null : kvEventsOf(parts.kv.intake, parts.kv.problems)),
    watch(changed) {
      listeners.add(changed);
      const offs = [registry.onChange(changed), registry.onRefresh(changed), health.onChange(changed)];
      return () => {
        listeners.delete(changed);
        for (const off of offs) off();
      };
    },
    close: offLedger,
  };
}

/** Codes of failures no instance caused: the client's request, no room in the ledger, admission's preemption. */
const NOT_AN_INSTANCE = new Set(['invalid_request', 'reserve_failed', 'preempted']);

/**
 * The instances whose last error a failed request becomes: the leg that failed, neither when the
 * client or the ledger caused it, both when the record does not say (a lease that ran out).
 * @example chargedTo('decode_failed', 0, 2) // [2]
 */
export function chargedTo(code: string | null, p: number, d: number): number[] {
  if (code !== null && NOT_AN_INSTANCE.has(code)) return [];
  if (code?.startsWith('prefill_') === true) return [p];
  if (code?.startsWith('decode_') === true) return [d];
  return p === d ? [p] : [p, d];
}

/**
 * Links as the registry's peers tell them: within a group, a P-D pair both of which list the
 * other is `ok`, listed by one side only is `linking`, listed by neither is `failed`.
 */
export function registryLinks(registry: ClusterRegistry): DashboardLink[] {
  const links: DashboardLink[] = [];
  for (const d of registry.byRole('decode')) {
    for (const p of registry.byRole('prefill')) {
      if (p.groupId !== d.groupId) continue;
      const fromD = d.peers.includes(p.id);
      const fromP = p.peers.includes(d.id);
      if (fromD && fromP) links.push({ p: p.id, d: d.id, state: 'ok', code: null });
      else if (fromD || fromP) links.push({ p: p.id, d: d.id, state: 'linking', code: null });
      else links.push({ p: p.id, d: d.id, state: 'failed', code: 'not linked' });
    }
  }
  return links;
}

/** The streams and the index's size as the page shows them; null when nothing is followed. */
function kvEventsOf(intake: KvEventIntake, problems: ReadonlyMap<number, string>): DashboardKvEvents | null {
  const views = intake.views();
  if (views.length === 0 && problems.size === 0) return null;
  return {
    heldBlocks: intake.state.index.held,
    bytes: intake.state.index.bytes,
    streams: views.map((v) => ({
      instance: v.spec.instance,
      dpRank: v.spec.dpRank,
      endpoint: v.spec.endpoint,
      connected: v.connected,
      lastSeq: v.lastSeq ?? null,
      applied: v.applied,
      replayed: v.replayed,
      skipped: v.malformed + v.oversize + v.badFrames,
      gaps: v.gaps,
      resets: { ...v.resets },
      orphans: v.blocks.orphans,
      lastError: v.lastError ?? null,
    })),
    problems: [...problems].map(([instance, reason]) => ({ instance, reason })),
  };
}
