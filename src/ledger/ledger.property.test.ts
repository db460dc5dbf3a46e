/**
 * Model-based property test of the ledger: random interleavings of reserve, begin, complete, fail,
 * release, extend, time passing, refreshes (changed capacity, removed or re-roled instances: a record
 * ends with its P and keeps P's side without its D) and lost links, checked step by step against a
 * plain model of what the ledger must hold.
 */
import { expect, test } from 'bun:test';
import fc from 'fast-check';
import type { InstanceRole } from '../cluster/instance.ts';
import { TestCluster, type TestInstanceSpec } from '../../test/doubles/cluster.ts';
import { PdlinkError, type ErrorCode } from '../core/errors.ts';
import type { InstanceLoad } from './accounts.ts';
import { ManualClock } from '../core/lease-clock.ts';
import { KvLedger } from './ledger.ts';
import { RELEASE_REASONS, type ActiveState, type TransferPhase } from './records.ts';

const INSTANCE_IDS = [0, 1, 2, 3];
const REQUEST_IDS = ['r0', 'r1', 'r2', 'r3', 'r4'];
const MAX_LEASE = 5_000;

/** An instance as the model reads it: every field the ledger's accounting depends on is set. */
type InstanceSpec = Required<Pick<TestInstanceSpec, 'id' | 'role' | 'availSlots' | 'availBlocks'>>;

type Op =
  | {
      kind: 'reserve';
      id: string;
      p: number;
      d: number;
      slots: number;
      pBlocks: number;
      dBlocks: number;
      leaseMs: number;
      phase: TransferPhase | null;
    }
  | { kind: 'begin'; id: string; phase: TransferPhase }
  | { kind: 'complete'; id: string; bytes: number }
  | { kind: 'fail'; id: string }
  | { kind: 'release'; id: string; reason: (typeof RELEASE_REASONS)[number] }
  | { kind: 'extend'; id: string; ms: number }
  | { kind: 'advance'; ms: number }
  | { kind: 'refresh'; instances: InstanceSpec[] }
  | { kind: 'linkLost'; p: number; d: number };

const requestId = fc.constantFrom(...REQUEST_IDS);
const instanceId = fc.constantFrom(...INSTANCE_IDS);
/** Ids 0–1 are prefill and 2–3 decode, except for an occasional role change (a removal plus an addition). */
const roleOf = (id: number): fc.Arbitrary<InstanceRole> => {
  const usual: InstanceRole = id < 2 ? 'prefill' : 'decode';
  return fc.oneof(
    { weight: 9, arbitrary: fc.constant(usual) },
    { weight: 1, arbitrary: fc.constant<InstanceRole>(usual === 'prefill' ? 'decode' : 'prefill') },
  );
};

/** A full snapshot: each instance present most of the time, so removals happen but do not dominate. */
const topologyArb: fc.Arbitrary<InstanceSpec[]> = fc
  .tuple(
    ...INSTANCE_IDS.map((id) =>
      fc.option(fc.record({ id: fc.constant(id), role: roleOf(id), availSlots: fc.nat(6), availBlocks: fc.nat(80) }), { freq: 10 }),
    ),
  )
  .map((specs) => specs.filter((s) => s !== null));

const opArb: fc.Arbitrary<Op> = fc.oneof(
  {
    weight: 6,
    arbitrary: fc.record({
      kind: fc.constant('reserve' as const),
      id: requestId,
      p: instanceId,
      d: instanceId,
      slots: fc.nat(3),
      pBlocks: fc.nat(30),
      dBlocks: fc.nat(30),
      leaseMs: fc.integer({ min: 1, max: MAX_LEASE }),
      phase: fc.constantFrom<TransferPhase | null>(null, null, 'prefilling', 'transferring'),
    }),
  },
  {
    weight: 4,
    arbitrary: fc.record({
      kind: fc.constant('begin' as const),
      id: requestId,
      phase: fc.constantFrom<TransferPhase>('prefilling', 'transferring'),
    }),
  },
  { weight: 3, arbitrary: fc.record({ kind: fc.constant('complete' as const), id: requestId, bytes: fc.nat(1 << 20) }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('fail' as const), id: requestId }) },
  {
    weight: 1,
    arbitrary: fc.record({ kind: fc.constant('release' as const), id: requestId, reason: fc.constantFrom(...RELEASE_REASONS) }),
  },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('extend' as const), id: requestId, ms: fc.integer({ min: 1, max: MAX_LEASE }) }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('advance' as const), ms: fc.nat(3_000) }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('refresh' as const), instances: topologyArb }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('linkLost' as const), p: instanceId, d: instanceId }) },
);

interface ModelRecord {
  p: number;
  d: number;
  slots: number;
  pBlocks: number;
  dBlocks: number;
  state: ActiveState;
  leaseMs: number;
  deadline: number;
  /** False once a refresh removed its D (P's side stays). */
  decodeHeld: boolean;
}

/** What the ledger must hold, computed the obvious way (sums over records, no incremental counters). */
class Model {
  now = 0;
  instances = new Map<number, InstanceSpec>();
  active = new Map<string, ModelRecord>();
  reserves = 0;
  /** Reservations that began a phase themselves: that phase was entered without an event of its own. */
  begunWithReserve = 0;
  ended = 0;
  /** Records that lost their D to a refresh (each one an event). */
  decodeDrops = 0;

  reserved(id: number): { slots: number; blocks: number } {
    let slots = 0;
    let blocks = 0;
    for (const r of this.active.values()) {
      if (r.p === id) {
        slots += r.slots;
        blocks += r.pBlocks;
      }
      if (r.d === id && r.decodeHeld) {
        slots += r.slots;
        blocks += r.dBlocks;
      }
    }
    return { slots, blocks };
  }

  expireDue(): void {
    for (const [id, r] of this.active) if (r.deadline <= this.now) this.end(id);
  }

  end(id: string): void {
    this.active.delete(id);
    this.ended++;
  }

  /** The error code the ledger must throw for this reservation, or null if it must succeed. */
  reserveOutcome(op: Extract<Op, { kind: 'reserve' }>): ErrorCode | null {
    if (this.active.has(op.id)) return 'conflict';
    const p = this.instances.get(op.p);
    const d = this.instances.get(op.d);
    if (p === undefined || d === undefined) return 'unavailable';
    const fits = (spec: InstanceSpec, slots: number, blocks: number): boolean => {
      const held = this.reserved(spec.id);
      return slots <= Math.max(0, spec.availSlots - held.slots) && blocks <= Math.max(0, spec.availBlocks - held.blocks);
    };
    const ok =
      op.p === op.d ? fits(p, 2 * op.slots, op.pBlocks + op.dBlocks) : fits(p, op.slots, op.pBlocks) && fits(d, op.slots, op.dBlocks);
    return ok ? null : 'insufficient_capacity';
  }
}

const ORDER: Record<ActiveState, number> = { reserved: 0, prefilling: 1, transferring: 2 };

/** Runs one op on ledger and model and checks the ledger threw exactly what the model predicts. */
function step(op: Op, ledger: KvLedger, clock: ManualClock, cluster: TestCluster, model: Model): void {
  model.expireDue();
  let expected: ErrorCode | null = null;
  let apply = (): void => {};
  const rec = 'id' in op ? model.active.get(op.id) : undefined;
  const absent: ErrorCode = 'not_found';
  // An id that ended earlier is a conflict if still in `recent` (capacity is ample here), otherwise not found.
  const missing = (id: string): ErrorCode => (ledger.get(id) === undefined ? absent : 'conflict');

  switch (op.kind) {
    case 'reserve': {
      expected = model.reserveOutcome(op);
      apply = () => {
        model.active.set(op.id, { ...op, state: op.phase ?? 'reserved', deadline: model.now + op.leaseMs, decodeHeld: true });
        model.reserves++;
        if (op.phase !== null) model.begunWithReserve++;
      };
      break;
    }
    case 'begin':
      if (rec === undefined) expected = missing(op.id);
      else if (ORDER[op.phase] <= ORDER[rec.state]) expected = 'conflict';
      else
        apply = () => {
          rec.state = op.phase;
          rec.deadline = model.now + rec.leaseMs;
        };
      break;
    case 'complete':
      if (rec === undefined) expected = missing(op.id);
      else if (rec.state === 'reserved') expected = 'conflict';
      else apply = () => model.end(op.id);
      break;
    case 'fail':
    case 'release':
      if (rec === undefined) expected = missing(op.id);
      else apply = () => model.end(op.id);
      break;
    case 'extend':
      if (rec === undefined) expected = missing(op.id);
      else apply = () => void (rec.deadline = model.now + op.ms);
      break;
    case 'advance':
      apply = () => {
        model.now += op.ms;
        model.expireDue();
      };
      break;
    case 'refresh':
      apply = () => {
        const next = new Map(op.instances.map((i) => [i.id, i] as const));
        for (const [id, before] of model.instances) {
          const after = next.get(id);
          if (after !== undefined && after.role === before.role) continue;
          // A record whose P left ends; one whose D alone left keeps P's side, waiting for another D.
          for (const [rid, r] of model.active) {
            if (r.p === id) model.end(rid);
            else if (r.d === id && r.decodeHeld) {
              r.decodeHeld = false;
              model.decodeDrops++;
            }
          }
        }
        model.instances = next;
      };
      break;
    case 'linkLost':
      apply = () => {
        for (const [rid, r] of model.active) if (r.p === op.p && r.d === op.d) model.end(rid);
      };
      break;
  }

  const before = new Map<number, InstanceLoad | undefined>();
  if (op.kind === 'reserve') for (const id of [op.p, op.d]) before.set(id, ledger.instanceLoad(id));

  let actual: ErrorCode | null = null;
  try {
    switch (op.kind) {
      case 'reserve':
        ledger.reserve({
          requestId: op.id,
          p: op.p,
          d: op.d,
          slots: op.slots,
          pBlocks: op.pBlocks,
          dBlocks: op.dBlocks,
          leaseMs: op.leaseMs,
          ...(op.phase === null ? {} : { phase: op.phase }),
        });
        break;
      case 'begin':
        ledger.begin(op.id, op.phase);
        break;
      case 'complete':
        ledger.complete(op.id, { bytes: op.bytes });
        break;
      case 'fail':
        ledger.fail(op.id, 'LLM_FAILED');
        break;
      case 'release':
        ledger.release(op.id, op.reason);
        break;
      case 'extend':
        ledger.extend(op.id, op.ms);
        break;
      case 'advance':
        clock.advance(op.ms);
        break;
      case 'refresh':
        cluster.refresh(op.instances);
        break;
      case 'linkLost':
        ledger.linkLost(op.p, op.d);
        break;
    }
  } catch (err) {
    if (!(err instanceof PdlinkError)) throw err;
    actual = err.code;
  }
  expect(actual).toBe(expected);
  if (expected === null) apply();

  if (op.kind === 'reserve' && expected === null) {
    // Never over-allocate: what this reservation added on P and D fits what was free on each just before.
    for (const id of new Set([op.p, op.d])) {
      const was = before.get(id) as InstanceLoad;
      const now = ledger.instanceLoad(id) as InstanceLoad;
      const addedSlots = now.reservedSlots - was.reservedSlots;
      const addedBlocks = now.reservedBlocks - was.reservedBlocks;
      expect(addedSlots).toBe((id === op.p ? op.slots : 0) + (id === op.d ? op.slots : 0));
      expect(addedBlocks).toBe((id === op.p ? op.pBlocks : 0) + (id === op.d ? op.dBlocks : 0));
      expect(addedSlots).toBeLessThanOrEqual(was.availSlots);
      expect(addedBlocks).toBeLessThanOrEqual(was.availBlocks);
    }
  }
}

function checkInvariants(ledger: KvLedger, clock: ManualClock, model: Model): void {
  const snapshot = ledger.snapshot();
  expect(snapshot.active.map((r) => r.requestId).sort()).toEqual([...model.active.keys()].sort());
  for (const r of snapshot.active) expect(r.state).toBe((model.active.get(r.requestId) as ModelRecord).state);
  let slots = 0;
  let blocks = 0;
  for (const id of INSTANCE_IDS) {
    const spec = model.instances.get(id);
    const load = ledger.instanceLoad(id);
    if (spec === undefined) {
      expect(load).toBeUndefined();
      continue;
    }
    const held = model.reserved(id);
    expect(load).toEqual({
      reservedSlots: held.slots,
      reservedBlocks: held.blocks,
      availSlots: Math.max(0, spec.availSlots - held.slots),
      availBlocks: Math.max(0, spec.availBlocks - held.blocks),
      reportedSlots: spec.availSlots,
      reportedBlocks: spec.availBlocks,
    });
    slots += held.slots;
    blocks += held.blocks;
  }
  // Totals equal the sum over instances and the sum over active records.
  const t = snapshot.totals;
  expect([t.reservedSlots, t.reservedBlocks]).toEqual([slots, blocks]);
  const fromRecords = { slots: 0, blocks: 0 };
  for (const r of snapshot.active) {
    expect(r.decodeHeld).toBe((model.active.get(r.requestId) as ModelRecord).decodeHeld);
    fromRecords.slots += (r.decodeHeld ? 2 : 1) * r.slots;
    fromRecords.blocks += r.pBlocks + (r.decodeHeld ? r.dBlocks : 0);
  }
  expect(fromRecords).toEqual({ slots, blocks });
  expect(t.active + t.done + t.failed + t.expired + t.released).toBe(model.reserves);
  expect(t.done + t.failed + t.expired + t.released).toBe(model.ended);
  // One timer at most, and every active lease is covered by it: armed no later than the earliest deadline.
  expect(clock.pendingTimers).toBeLessThanOrEqual(1);
  if (t.active > 0) {
    const earliest = Math.min(...snapshot.active.map((r) => r.deadline));
    expect(clock.nextTimerDue).toBeLessThanOrEqual(earliest);
  }
}

test('random interleavings never over-allocate, keep totals exact, and return to zero', () => {
  fc.assert(
    fc.property(
      topologyArb,
      fc.array(opArb, { minLength: 10, maxLength: 120, size: 'max' }),
      fc.boolean(),
      (initial, ops, finishByExpiry) => {
        const cluster = new TestCluster();
        const clock = new ManualClock(0);
        const ledger = new KvLedger({ cluster, clock, recentCapacity: 1_000 });
        const model = new Model();
        step({ kind: 'refresh', instances: initial }, ledger, clock, cluster, model);
        let events = 0;
        ledger.onRecord(() => events++);
        for (const op of ops) {
          step(op, ledger, clock, cluster, model);
          checkInvariants(ledger, clock, model);
        }
        expect(events).toBe(model.reserves + model.ended + countBegins(ledger) - model.begunWithReserve + model.decodeDrops);

        if (finishByExpiry) clock.advance(MAX_LEASE);
        else ledger.close();
        const totals = ledger.totals();
        expect(totals).toMatchObject({ active: 0, reservedSlots: 0, reservedBlocks: 0 });
        for (const id of INSTANCE_IDS) {
          const load = ledger.instanceLoad(id);
          if (load !== undefined) expect([load.reservedSlots, load.reservedBlocks]).toEqual([0, 0]);
        }
        if (!finishByExpiry) expect(clock.pendingTimers).toBe(0);
        clock.advance(MAX_LEASE);
        expect(clock.pendingTimers).toBe(0);
      },
    ),
    { numRuns: 400, includeErrorInReport: true },
  );
});

/** Begin events so far: every record (active or ended) contributes one per phase it entered. */
function countBegins(ledger: KvLedger): number {
  const { active, recent } = ledger.snapshot();
  const all = [...active, ...recent];
  return all.reduce((n, r) => n + (r.prefillingAt === null ? 0 : 1) + (r.transferringAt === null ? 0 : 1), 0);
}
