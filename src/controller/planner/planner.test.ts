import { describe, expect, test } from 'bun:test';
import type { ControllerView, MemberView } from '../controller-view.ts';
import type { Role } from '../../schema/role.ts';
import { errors } from '../../core/errors.ts';
import type { MoveRequest, MoveStart, MoveView, MovesView } from './moves.ts';
import { Planner } from './planner.ts';
import { PLANNER_DEFAULTS, type PlannerSettings } from './settings.ts';

/** Pressure p of an instance is p × IN_FLIGHT legs in flight (slots and blocks negligible). */
const IN_FLIGHT = 100;
const SLOTS = 1_000_000;

/**
 * A modelled cluster: each stage's demand (in instances' worth) spreads evenly over its serving
 * instances; a move ends at once, so the next sample sees the new split.
 */
class ModelPort {
  readonly roles = new Map<number, Role>();
  readonly fixed = new Set<number>();
  readonly pinned = new Set<number>();
  demand = { prefill: 1, decode: 1 };
  readonly moved: { id: number; to: Role; at: number }[] = [];
  lastEnded: number | undefined;
  refuse: string | undefined;
  now = 0;

  constructor(prefill: number[], decode: number[]) {
    for (const id of prefill) this.roles.set(id, 'prefill');
    for (const id of decode) this.roles.set(id, 'decode');
  }

  count(role: Role): number {
    return [...this.roles.values()].filter((r) => r === role).length;
  }

  view(): ControllerView {
    const members = [...this.roles].map(([id, role]): MemberView => {
      const inFlight = Math.round((this.demand[role] / this.count(role)) * IN_FLIGHT);
      return {
        id,
        role,
        group: 0,
        state: 'serving',
        reachable: true,
        lastSeenAt: 0,
        roleStatus: 'RoleReady',
        desiredPeers: [],
        linkedPeers: [],
        inSnapshot: true,
        lastError: undefined,
        inferenceUrl: 'http://127.0.0.1:1',
        resources: { totalSlots: SLOTS, availSlots: SLOTS - inFlight, totalBlocks: SLOTS, availBlocks: SLOTS },
        failedLinks: new Map(),
        move: this.pinned.has(id)
          ? { seq: 1, from: role, to: role, base: role, group: 0, phase: 'done', by: 'operator', reason: '', since: 0, pinned: true }
          : undefined,
        roleFixed: this.fixed.has(id),
      };
    });
    return { members } as unknown as ControllerView;
  }

  acting(): boolean {
    return true;
  }

  move(id: number, to: Role, _request: MoveRequest): MoveStart {
    if (this.refuse !== undefined) throw errors.conflictWith(this.refuse, 'id');
    this.roles.set(id, to);
    this.moved.push({ id, to, at: this.now });
    this.lastEnded = this.now;
    return { outcome: 'started', move: undefined };
  }

  get moves(): MovesView {
    return { current: undefined, history: [] as MoveView[], lastEnded: () => this.lastEnded };
  }

  coordinators(): readonly string[] {
    return [];
  }
}

const LOAD: PlannerSettings = {
  ...PLANNER_DEFAULTS,
  mode: 'load',
  intervalMs: 1000,
  windowMs: 5000,
  cooldownMs: 10_000,
  load: { prefillInFlight: IN_FLIGHT, decodeInFlight: IN_FLIGHT, usage: 1 },
};

/** Runs the planner for `seconds` seconds: a sample each second and a decision each interval. */
async function run(planner: Planner, port: ModelPort, seconds: number, demand?: (t: number) => { prefill: number; decode: number }) {
  for (let t = 0; t < seconds; t++) {
    port.now += 1000;
    if (demand !== undefined) port.demand = demand(t);
    await planner.sample(port.now);
    if (port.now % planner.settings.intervalMs === 0) planner.decide(port.now);
  }
}

describe('the load planner over a modelled cluster', () => {
  test('a shift from prefill-heavy to decode-heavy moves instances one at a time, each after a full window and the cool-down', async () => {
    const port = new ModelPort([100, 101, 102], [200]);
    const lines: string[] = [];
    const planner = new Planner({ settings: LOAD, port, now: () => port.now, log: (l) => lines.push(l) });
    port.demand = { prefill: 2, decode: 0.5 };
    await run(planner, port, 30);
    expect(port.moved).toEqual([]);
    port.demand = { prefill: 0.3, decode: 2.4 };
    await run(planner, port, 60);
    expect(port.moved.map((m) => `${m.id}→${m.to}`)).toEqual(['100→decode', '101→decode']);
    const [first, second] = port.moved;
    expect(second!.at - first!.at).toBeGreaterThanOrEqual(LOAD.cooldownMs);
    expect(port.count('prefill')).toBe(1);
    expect(lines.filter((l) => l.includes(': move: '))).toHaveLength(2);
    expect(lines.some((l) => l.includes('warming_up: gathering 5 s of signals since the group last changed'))).toBe(true);
    expect(planner.view().groups[0]).toMatchObject({ group: 0, prefill: 1, decode: 3 });
  });

  test('a load swinging between the stages faster than the window moves nothing; a planner without window, cool-down and margin would flap', async () => {
    const swing = (t: number) => (t % 2 === 0 ? { prefill: 2.4, decode: 0.6 } : { prefill: 0.6, decode: 2.4 });
    const naive = new ModelPort([100, 101], [200, 201]);
    const flappy = new Planner({ settings: { ...LOAD, windowMs: 1, cooldownMs: 0, margin: 0 }, port: naive, now: () => naive.now });
    await run(flappy, naive, 40, swing);
    expect(naive.moved.length).toBeGreaterThan(10);

    const port = new ModelPort([100, 101], [200, 201]);
    const planner = new Planner({ settings: LOAD, port, now: () => port.now });
    await run(planner, port, 200, swing);
    expect(port.moved).toEqual([]);
  });

  test('decode oscillating around its threshold with prefill idle: one move to more decode, never back', async () => {
    const port = new ModelPort([100, 101], [200, 201]);
    const planner = new Planner({ settings: LOAD, port, now: () => port.now });
    await run(planner, port, 300, (t) => ({ prefill: 0.5, decode: Math.floor(t / 3) % 2 === 0 ? 2.3 : 1.8 }));
    expect(port.moved.map((m) => `${m.id}→${m.to}`)).toEqual(['100→decode']);
  });

  test('pinned and file-fixed instances stay; a refused move is recorded with its reason', async () => {
    const port = new ModelPort([100, 101], [200]);
    port.fixed.add(100);
    port.pinned.add(101);
    const planner = new Planner({ settings: LOAD, port, now: () => port.now });
    port.demand = { prefill: 0.2, decode: 3 };
    await run(planner, port, 10);
    expect(port.moved).toEqual([]);
    expect(planner.view().groups[0]!.decision).toMatchObject({ code: 'none_movable' });

    port.fixed.clear();
    port.pinned.clear();
    port.refuse = 'a move is under way';
    await run(planner, port, 2);
    expect(planner.view().groups[0]!.decision).toMatchObject({ code: 'refused', reason: 'the move was refused: a move is under way' });
  });

  test('off: samples and decides nothing', async () => {
    const port = new ModelPort([100], [200, 201]);
    const planner = new Planner({ settings: PLANNER_DEFAULTS, port, now: () => port.now });
    port.demand = { prefill: 5, decode: 0 };
    await run(planner, port, 30);
    expect(planner.decide(port.now)).toEqual([]);
    expect(planner.view().groups).toEqual([]);
  });
});
