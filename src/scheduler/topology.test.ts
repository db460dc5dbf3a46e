import { describe, expect, test } from 'bun:test';
import * as fc from 'fast-check';
import { TestCluster, type TestInstanceSpec } from '../../test/doubles/cluster.ts';
import { createHealth } from './breakers.ts';
import { capacityOf } from './loads.ts';
import { TestLoads } from '../../test/doubles/scheduler.ts';
import { Topology } from './topology.ts';

function setup(specs: TestInstanceSpec[]) {
  const cluster = new TestCluster(specs);
  const loads = new TestLoads();
  const clock = { now: 0 };
  const health = createHealth({ clock: () => clock.now, failureThreshold: 1, cooldownMs: 100 });
  const removed: number[] = [];
  const topology = new Topology({ cluster, loads, breakers: health, onRemove: (n) => removed.push(n.id) });
  const pool = () => [...topology.prefills.members()].map((n) => n.id).sort((a, b) => a - b);
  const decodesOf = (p: number) => [...(topology.get(p)?.decodes.members() ?? [])].map((n) => n.id).sort((a, b) => a - b);
  const links = (id: number) => [...(topology.get(id)?.links ?? [])].map((n) => n.id).sort((a, b) => a - b);
  return { cluster, loads, clock, health, topology, removed, pool, decodesOf, links };
}

const P = (id: number, group = 0, extra: Partial<TestInstanceSpec> = {}): TestInstanceSpec => ({ id, role: 'prefill', group, ...extra });
const D = (id: number, peers: number[], group = 0, extra: Partial<TestInstanceSpec> = {}): TestInstanceSpec => ({
  id,
  role: 'decode',
  group,
  peers,
  ...extra,
});

describe('Topology links (MindIE rule: same group and D lists P)', () => {
  test('links only P/D pairs of one group where D lists P', () => {
    const { links, pool, decodesOf } = setup([P(0, 0), P(1, 0), P(2, 1), D(10, [0], 0), D(11, [0, 1, 2], 0), D(12, [2], 1), D(13, [0], 1)]);
    expect(links(0)).toEqual([10, 11]);
    expect(links(1)).toEqual([11]);
    expect(links(2)).toEqual([12]); // 11 lists 2 but sits in group 0; 13 is in group 1 but does not list 2
    expect(links(13)).toEqual([]);
    expect(pool()).toEqual([0, 1, 2]);
    expect(decodesOf(0)).toEqual([10, 11]);
  });

  test('a P without a linked D is not schedulable', () => {
    const { pool, topology } = setup([P(0), P(1), D(10, [0])]);
    expect(pool()).toEqual([0]);
    expect(topology.counts()).toEqual({
      prefill: 2,
      decode: 1,
      linkedPrefill: 1,
      healthyLinkedPrefill: 1,
      pairedPrefill: 1,
      schedulablePrefill: 1,
    });
  });

  test('role-undefined instances are never indexed', () => {
    const { topology, pool } = setup([P(0), { id: 5, role: 'undefined', group: 0 }, D(10, [0, 5])]);
    expect(topology.get(5)).toBeUndefined();
    expect(pool()).toEqual([0]);
    expect(topology.counts().prefill).toBe(1);
  });
});

describe('Topology follows registry diffs', () => {
  test('an added D links to the P it lists; an added P links to the D that list it', () => {
    const { cluster, pool, links } = setup([P(0), D(10, [0, 1])]);
    expect(links(10)).toEqual([0]);
    cluster.refresh([P(0), D(10, [0, 1]), P(1), D(11, [1])]);
    expect(links(1)).toEqual([10, 11]);
    expect(pool()).toEqual([0, 1]);
  });

  test('a P and the D listing it can arrive in the same diff, in either order', () => {
    const { cluster, pool } = setup([]);
    cluster.refresh([D(10, [0]), P(0)]);
    expect(pool()).toEqual([0]);
  });

  test('a D that drops P from its peers unlinks; P leaves the pool when it was its only D', () => {
    const { cluster, pool, links } = setup([P(0), D(10, [0])]);
    cluster.refresh([P(0), D(10, [])]);
    expect(links(0)).toEqual([]);
    expect(pool()).toEqual([]);
    cluster.refresh([P(0), D(10, [0])]);
    expect(pool()).toEqual([0]);
  });

  test('a D listing the same peers in another order stays linked; other peers of the same count relink', () => {
    const { cluster, links, decodesOf } = setup([P(0), P(1), P(2), D(10, [0, 1])]);
    cluster.refresh([P(0), P(1), P(2), D(10, [1, 0], 0, { availSlots: 150 })]);
    expect(links(10)).toEqual([0, 1]);
    expect(decodesOf(1)).toEqual([10]);
    cluster.refresh([P(0), P(1), P(2), D(10, [0, 2], 0, { availSlots: 150 })]);
    expect(links(10)).toEqual([0, 2]);
    expect(links(1)).toEqual([]);
  });

  test('a D listing more peers than it searches in its list (a set beside it) links, keeps and drops them alike', () => {
    const many = Array.from({ length: 20 }, (_, i) => i);
    const prefills = many.map((id) => P(id));
    const { cluster, links, decodesOf } = setup([...prefills, D(100, many)]);
    expect(links(100)).toEqual(many);
    expect(decodesOf(19)).toEqual([100]);
    // The same peers in another order: nothing moves.
    cluster.refresh([...prefills, D(100, [...many].reverse(), 0, { availSlots: 150 })]);
    expect(links(100)).toEqual(many);
    // Down to a short list: the dropped ones unlink, the rest stay.
    cluster.refresh([...prefills, D(100, [3, 7])]);
    expect(links(100)).toEqual([3, 7]);
    expect(links(19)).toEqual([]);
    expect(decodesOf(3)).toEqual([100]);
    // Back to a long one, with a peer that is not a P in its group.
    cluster.refresh([...prefills, P(200, 1), D(100, [...many, 200])]);
    expect(links(100)).toEqual(many);
    expect(links(200)).toEqual([]);
  });

  test('a group change relinks both sides', () => {
    const { cluster, links } = setup([P(0, 0), P(1, 1), D(10, [0, 1], 0)]);
    expect(links(10)).toEqual([0]);
    cluster.refresh([P(0, 0), P(1, 1), D(10, [0, 1], 1)]);
    expect(links(10)).toEqual([1]);
    cluster.refresh([P(0, 1), P(1, 1), D(10, [0, 1], 1)]);
    expect(links(10)).toEqual([0, 1]);
    cluster.refresh([P(0, 2), P(1, 1), D(10, [0, 1], 1)]);
    expect(links(10)).toEqual([1]);
    expect(links(0)).toEqual([]);
  });

  test('removing an instance unlinks it and reports it; its id can come back', () => {
    const { cluster, pool, links, removed, topology } = setup([P(0), P(1), D(10, [0, 1])]);
    cluster.refresh([P(1), D(10, [0, 1])]);
    expect(removed).toEqual([0]);
    expect(topology.get(0)).toBeUndefined();
    expect(links(10)).toEqual([1]);
    expect(pool()).toEqual([1]);
    cluster.refresh([P(1)]);
    expect(pool()).toEqual([]);
    expect(topology.counts()).toMatchObject({ prefill: 1, decode: 0, linkedPrefill: 0 });
    cluster.refresh([P(0), P(1), D(10, [0])]);
    expect(pool()).toEqual([0]);
  });

  test('a role change (removal plus addition) swaps the node', () => {
    const { cluster, pool, topology } = setup([P(0), P(1), D(10, [0])]);
    cluster.refresh([P(0), D(1, [0]), D(10, [0])]);
    expect(topology.get(1)?.role).toBe('decode');
    expect(topology.counts()).toMatchObject({ prefill: 1, decode: 2 });
    expect(pool()).toEqual([0]);
    cluster.refresh([P(0), { id: 1, role: 'undefined' }, D(10, [0])]);
    expect(topology.get(1)).toBeUndefined();
  });

  test('reported capacity moves nodes in and out of the pools', () => {
    const { cluster, pool, decodesOf, topology } = setup([P(0), D(10, [0]), D(11, [0])]);
    cluster.refresh([P(0), D(10, [0], 0, { availSlots: 0 }), D(11, [0])]);
    expect(decodesOf(0)).toEqual([11]);
    cluster.refresh([P(0), D(10, [0], 0, { availSlots: 0 }), D(11, [0], 0, { availBlocks: 0 })]);
    expect(pool()).toEqual([]);
    expect(topology.counts()).toMatchObject({ pairedPrefill: 1, schedulablePrefill: 0 });
    cluster.refresh([P(0, 0, { availSlots: 50 }), D(10, [0]), D(11, [0])]);
    expect(pool()).toEqual([0]);
    expect(topology.get(0)?.load).toBe(0.5);
  });

  test('ledger reservations move loads and, when they exhaust an instance, membership', () => {
    const { loads, pool, topology } = setup([P(0, 0, { totalSlots: 4 }), D(10, [0], 0, { totalSlots: 2 })]);
    loads.reserve(0, 1, 0);
    expect(topology.get(0)?.load).toBe(0.25);
    loads.reserve(10, 2, 0);
    expect(topology.get(10)?.freeSlots).toBe(0);
    expect(pool()).toEqual([]);
    loads.reserve(10, -1, 0);
    expect(pool()).toEqual([0]);
    loads.reserve(99, 1, 1); // unknown instance: ignored
  });

  test('a reservation reorders every pool the instance is in', () => {
    const { loads, topology } = setup([P(0), P(1), D(10, [0, 1]), D(11, [0, 1])]);
    const order = (pool: Iterable<{ id: number }>) => [...pool].map((n) => n.id);
    expect(order(topology.prefills.ascending())).toEqual([0, 1]);
    loads.reserve(0, 10, 0);
    expect(order(topology.prefills.ascending())).toEqual([1, 0]);
    loads.reserve(10, 5, 0);
    expect(order(topology.get(0)!.decodes.ascending())).toEqual([11, 10]);
    expect(order(topology.get(1)!.decodes.ascending())).toEqual([11, 10]);
    loads.reserve(10, -5, 0);
    loads.reserve(11, 1, 0);
    expect(order(topology.get(1)!.decodes.ascending())).toEqual([10, 11]);
  });

  test('circuit changes move nodes; counters say which side is unhealthy', () => {
    const { health, clock, pool, topology } = setup([P(0), D(10, [0])]);
    health.recordFailure(10);
    expect(pool()).toEqual([]);
    expect(topology.counts()).toMatchObject({ healthyLinkedPrefill: 1, pairedPrefill: 0 });
    health.recordFailure(0);
    expect(topology.counts()).toMatchObject({ linkedPrefill: 1, healthyLinkedPrefill: 0, pairedPrefill: 0 });
    clock.now += 100;
    health.poll();
    expect(pool()).toEqual([0]);
    expect(topology.counts()).toMatchObject({ healthyLinkedPrefill: 1, pairedPrefill: 1 });
  });

  test('a new node reads its circuit and load when it arrives', () => {
    const { cluster, health, loads, topology, pool } = setup([P(0)]);
    health.recordFailure(10);
    loads.reserve(11, 100, 0);
    cluster.refresh([P(0), D(10, [0]), D(11, [0])]);
    expect(topology.get(10)?.admissible).toBe(false);
    expect(topology.get(11)?.freeSlots).toBe(0);
    expect(pool()).toEqual([]);
  });

  test('the pools order by load', () => {
    const { cluster, topology } = setup([]);
    cluster.refresh([P(0, 0, { availSlots: 10 }), P(1, 0, { availSlots: 90 }), D(10, [0, 1], 0, { availBlocks: 100 }), D(11, [0, 1])]);
    expect(topology.prefills.min()?.id).toBe(1);
    expect(topology.get(0)?.decodes.min()?.id).toBe(11);
  });

  test('a load source that emits while it is read (a ledger expiring leases) is handled after the read', () => {
    const cluster = new TestCluster([P(0), D(10, [0]), D(11, [0])]);
    const reserved = new Map<number, number>([[11, 100]]);
    const listeners = new Set<(id: number) => void>();
    let expireOnRead = true;
    const loads = {
      load(id: number) {
        if (expireOnRead && id === 10) {
          // Reading D10 expires the reservation on D11 and announces it, re-entrantly.
          expireOnRead = false;
          reserved.delete(11);
          for (const listener of listeners) listener(11);
        }
        return { reservedSlots: reserved.get(id) ?? 0, reservedBlocks: 0 };
      },
      onLoadChange(listener: (id: number) => void) {
        listeners.add(listener);
        return () => listeners.delete(listener);
      },
    };
    const topology = new Topology({ cluster, loads, breakers: createHealth() });
    expect(topology.get(11)?.freeSlots).toBe(100);
    expect([...topology.get(0)!.decodes.ascending()].map((n) => n.id)).toEqual([10, 11]);
  });

  test('close() stops following every source', () => {
    const { cluster, loads, topology, pool } = setup([P(0), D(10, [0])]);
    topology.close();
    expect(loads.listenerCount).toBe(0);
    cluster.refresh([]);
    expect(pool()).toEqual([0]);
  });
});

describe('Topology matches a brute-force recomputation', () => {
  const spec = fc_spec();
  test('after any sequence of refreshes, reservations and circuit changes', () => {
    fc.assert(
      fc.property(fc.array(spec.op, { minLength: 1, maxLength: 40 }), (ops) => {
        const { cluster, loads, health, clock, topology } = setup([]);
        const reserved = new Map<number, { slots: number; blocks: number }>();
        for (const op of ops) {
          if (op.kind === 'refresh') cluster.refresh(op.specs);
          else if (op.kind === 'upsert') cluster.patch(op.spec);
          else if (op.kind === 'remove') cluster.remove(op.id);
          else if (op.kind === 'reserve') {
            const r = reserved.get(op.id) ?? { slots: 0, blocks: 0 };
            reserved.set(op.id, { slots: r.slots + op.slots, blocks: r.blocks + op.blocks });
            loads.reserve(op.id, op.slots, op.blocks);
          } else if (op.kind === 'fail') health.recordFailure(op.id);
          else if (op.kind === 'succeed') health.recordSuccess(op.id);
          else if (op.kind === 'admit') health.admit(op.id);
          else {
            clock.now += op.ms;
            health.poll();
          }
          expectConsistent(cluster, topology, health, reserved);
        }
      }),
      { numRuns: 200 },
    );
  });
});

function fc_spec() {
  const id = fc.nat(7);
  const instance = fc.record({
    id,
    role: fc.oneof(
      { weight: 4, arbitrary: fc.constantFrom('prefill' as const, 'decode' as const) },
      { weight: 1, arbitrary: fc.constant('undefined' as const) },
    ),
    group: fc.oneof({ weight: 4, arbitrary: fc.constant(0) }, { weight: 1, arbitrary: fc.constant(1) }),
    peers: fc.uniqueArray(id, { maxLength: 5 }),
    availSlots: fc.nat(6),
    availBlocks: fc.nat(6),
  });
  const sized = (i: Omit<TestInstanceSpec, 'totalSlots' | 'totalBlocks'>): TestInstanceSpec => ({ ...i, totalSlots: 6, totalBlocks: 6 });
  const specs = fc.uniqueArray(instance, { selector: (i) => i.id, maxLength: 8 }).map((list) => list.map(sized));
  const op = fc.oneof(
    fc.record({ kind: fc.constant('refresh' as const), specs }),
    // Single-instance changes leave the others out of the diff, as the registry does.
    fc.record({ kind: fc.constant('upsert' as const), spec: instance.map(sized) }),
    fc.record({ kind: fc.constant('upsert' as const), spec: instance.map(sized) }),
    fc.record({ kind: fc.constant('remove' as const), id }),
    fc.record({
      kind: fc.constant('reserve' as const),
      id,
      slots: fc.integer({ min: -1, max: 2 }),
      blocks: fc.integer({ min: -1, max: 2 }),
    }),
    fc.record({ kind: fc.constant('fail' as const), id }),
    fc.record({ kind: fc.constant('succeed' as const), id }),
    fc.record({ kind: fc.constant('admit' as const), id }),
    fc.record({ kind: fc.constant('tick' as const), ms: fc.constantFrom(10, 100) }),
  );
  return { op };
}

function expectConsistent(
  cluster: TestCluster,
  topology: Topology,
  health: ReturnType<typeof createHealth>,
  reserved: Map<number, { slots: number; blocks: number }>,
): void {
  const instances = cluster.all().filter((i) => i.role !== 'undefined');
  const free = (id: number) => {
    const i = cluster.get(id)!;
    const r = reserved.get(id) ?? { slots: 0, blocks: 0 };
    return { slots: Math.max(0, i.availSlots - r.slots), blocks: Math.max(0, i.availBlocks - r.blocks) };
  };
  const load = (id: number) =>
    capacityOf(cluster.get(id)!, { reservedSlots: reserved.get(id)?.slots ?? 0, reservedBlocks: reserved.get(id)?.blocks ?? 0 }).load;
  const byLoad = (ids: number[]) => [...ids].sort((a, b) => load(a) - load(b) || a - b);
  const viable = (id: number) => health.admissible(id) && free(id).slots > 0 && free(id).blocks > 0;
  const prefills = instances.filter((i) => i.role === 'prefill');
  const decodes = instances.filter((i) => i.role === 'decode');
  const linked = (p: number) => decodes.filter((d) => d.groupId === cluster.get(p)!.groupId && d.peers.includes(p)).map((d) => d.id);
  let linkedPrefill = 0;
  let healthyLinkedPrefill = 0;
  let pairedPrefill = 0;
  const expectedPool: number[] = [];
  for (const p of prefills) {
    const node = topology.get(p.id)!;
    const ds = linked(p.id).sort((a, b) => a - b);
    expect([...node.links].map((n) => n.id).sort((a, b) => a - b)).toEqual(ds);
    const viableDs = ds.filter(viable);
    expect(node.healthyLinks).toBe(ds.filter((d) => health.admissible(d)).length);
    expect([...node.decodes.ascending()].map((n) => n.id)).toEqual(byLoad(viableDs));
    if (ds.length > 0) linkedPrefill++;
    if (ds.length > 0 && health.admissible(p.id)) healthyLinkedPrefill++;
    if (health.admissible(p.id) && ds.some((d) => health.admissible(d))) pairedPrefill++;
    if (viable(p.id) && viableDs.length > 0) expectedPool.push(p.id);
    expect(node.freeSlots).toBe(free(p.id).slots);
  }
  expect([...topology.prefills.ascending()].map((n) => n.id)).toEqual(byLoad(expectedPool));
  expect(topology.counts()).toEqual({
    prefill: prefills.length,
    decode: decodes.length,
    linkedPrefill,
    healthyLinkedPrefill,
    pairedPrefill,
    schedulablePrefill: expectedPool.length,
  });
}

describe('Topology: a diff that moves many loads at once', () => {
  /** 4 groups of 10 P and 10 D in full mesh; `busy(id)` the slots in use of each instance. */
  const specs = (busy: (id: number) => number): TestInstanceSpec[] =>
    Array.from({ length: 4 }, (_, g) => {
      const ps = Array.from({ length: 10 }, (_, i) => g * 100 + i);
      return [
        ...ps.map((id) => P(id, g, { totalSlots: 100, availSlots: 100 - busy(id) })),
        ...Array.from({ length: 10 }, (_, i) => D(g * 100 + 50 + i, ps, g, { totalSlots: 100, availSlots: 100 - busy(g * 100 + 50 + i) })),
      ];
    }).flat();
  const ascending = (topology: Topology, p?: number) =>
    [...(p === undefined ? topology.prefills : topology.get(p)!.decodes).ascending()].map((n) => n.id);

  test('leaves every pool in the order a topology built from the new snapshot has', () => {
    const { cluster, topology } = setup(specs((id) => id % 7));
    // Every instance changes (80 nodes, above the batched threshold), in an order unrelated to the old one.
    const next = specs((id) => (id * 37) % 97);
    cluster.refresh(next);
    const fresh = setup(next).topology;
    expect(ascending(topology)).toEqual(ascending(fresh));
    for (const p of [0, 5, 103, 309]) expect(ascending(topology, p)).toEqual(ascending(fresh, p));
    expect(topology.prefills.min()?.id).toBe(fresh.prefills.min()?.id);
  });

  test('a circuit whose cool-down ended is read as of the diff: its node is back in the pools', () => {
    const { cluster, topology, health, clock } = setup(specs(() => 0));
    health.recordFailure(3);
    expect(topology.prefills.has(topology.get(3)!)).toBe(false);
    clock.now = 1_000;
    cluster.refresh(specs((id) => id % 5));
    expect(topology.get(3)!.admissible).toBe(true);
    expect(ascending(topology)).toEqual(ascending(setup(specs((id) => id % 5)).topology));
  });

  test('a small diff after a large one still reorders per node', () => {
    const { cluster, topology } = setup(specs(() => 0));
    cluster.refresh(specs((id) => (id * 13) % 50));
    cluster.refresh(specs((id) => (id === 7 ? 99 : (id * 13) % 50)));
    const fresh = setup(specs((id) => (id === 7 ? 99 : (id * 13) % 50))).topology;
    expect(ascending(topology)).toEqual(ascending(fresh));
    expect(ascending(topology, 7)).toEqual(ascending(fresh, 7));
  });
});
