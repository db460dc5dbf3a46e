import { describe, expect, test } from 'bun:test';
import { BUSY, FakeAgentCluster, IDLE, fakeInstance, rounds } from '../../../test/doubles/controller-agents.ts';
import { PdlinkError } from '../../core/errors.ts';
import { Controller } from '../controller.ts';
import { DEFAULT_TIMING, type TopologySpec } from '../types.ts';
import { PLANNER_DEFAULTS } from './settings.ts';

// Roles by the 1:1 rates in id order: 100 and 102 prefill, 101 and 103 decode.
const IPS = { 100: '10.0.0.1', 101: '10.0.0.2', 102: '10.0.0.3', 103: '10.0.0.4' } as const;
const SPEC: TopologySpec = {
  coordinators: ['http://127.0.0.1:1026'],
  timing: DEFAULT_TIMING,
  rates: { p: 1, d: 1 },
  instances: Object.entries(IPS).map(([id, ip]) => fakeInstance(Number(id), ip)),
  planner: { ...PLANNER_DEFAULTS, moveTimeoutMs: 120_000 },
};

function setup(options: { leading?: boolean; fake?: FakeAgentCluster; clock?: { now: number } } = {}) {
  const fake = options.fake ?? new FakeAgentCluster();
  const clock = options.clock ?? { now: 1_000_000 };
  const logs: string[] = [];
  const stored: string[] = [];
  const controller = new Controller({
    spec: SPEC,
    client: fake,
    now: () => clock.now,
    log: (line) => logs.push(line),
    leading: options.leading ?? true,
    events: { moved: (m) => stored.push(`${m.id} ${m.phase}${m.outcome === undefined ? '' : ` ${m.outcome}`}`) },
  });
  return { controller, fake, clock, logs, stored };
}

const refusal = (fn: () => unknown): { status: number; message: string } => {
  try {
    fn();
  } catch (err) {
    if (err instanceof PdlinkError) return { status: err.status, message: err.message };
    throw err;
  }
  throw new Error('not refused');
};

describe('a move between roles', () => {
  test('drains before it switches: out of the snapshot at once, its role posted only once it is idle, back in as its new role', async () => {
    const { controller, fake, logs, stored } = setup();
    await rounds(controller);
    expect(fake.snapshotRoles).toEqual(['100:P', '101:D', '102:P', '103:D']);
    fake.agent(IPS[100]).resource = { ...BUSY };

    const started = controller.move(100, 'decode', { by: 'operator', reason: 'asked' });
    expect(started).toMatchObject({
      outcome: 'started',
      move: { id: 100, from: 'prefill', to: 'decode', phase: 'draining', pinned: true },
    });
    await rounds(controller);
    expect(fake.last.ids).toEqual([101, 102, 103]);
    expect(controller.view().members.find((m) => m.id === 100)!.state).toBe('moving');
    // Still busy: no post to it yet, and it keeps its old role and links.
    expect(fake.posts.filter((p) => p.host === IPS[100] && p.role === 'decode')).toEqual([]);
    expect(fake.agent(IPS[100]).role).toBe('prefill');

    fake.agent(IPS[100]).resource = { ...IDLE };
    await rounds(controller);
    const removedAt = fake.order.indexOf('refresh 101,102,103');
    const switchedAt = fake.order.indexOf(`post ${IPS[100]} decode`);
    expect(removedAt).toBeGreaterThanOrEqual(0);
    expect(switchedAt).toBeGreaterThan(removedAt);
    expect(fake.snapshotRoles).toEqual(['100:D', '101:D', '102:P', '103:D']);
    expect(fake.agent(IPS[100]).peers).toEqual([IPS[102]]);
    expect(fake.agent(IPS[102]).peers.sort()).toEqual([IPS[100], IPS[101], IPS[103]].sort());
    expect(controller.moves.current).toBeUndefined();
    expect(controller.moves.history[0]).toMatchObject({ id: 100, from: 'prefill', to: 'decode', outcome: 'done' });
    expect(stored).toEqual(['100 draining', '100 switching', '100 done done']);
    expect(logs).toContain('instance 100 moving prefill → decode (operator: asked): draining');
    expect(logs).toContain('instance 100 drained: switching prefill → decode');
    // The record stays: the store keeps the role it was moved to.
    expect(controller.storedState().assignments.find((a) => a.id === 100)).toMatchObject({
      role: 'decode',
      move: { phase: 'done', from: 'prefill', to: 'decode', base: 'prefill', pinned: true },
    });
  });

  test('one move at a time (409), unknown instance (404), a group keeps its minimum (409)', async () => {
    const { controller } = setup();
    await rounds(controller);
    expect(refusal(() => controller.move(999, 'decode', { by: 'operator', reason: 'x' }))).toMatchObject({ status: 404 });
    controller.move(100, 'decode', { by: 'operator', reason: 'x' });
    expect(refusal(() => controller.move(101, 'prefill', { by: 'operator', reason: 'y' }))).toEqual({
      status: 409,
      message: 'a move is under way (instance 100 prefill → decode, draining); one move at a time: try again when it is done',
    });
    await rounds(controller);
    expect(controller.moves.current).toBeUndefined();
    // 102 is now the group's only prefill instance.
    expect(refusal(() => controller.move(102, 'decode', { by: 'operator', reason: 'z' }))).toEqual({
      status: 409,
      message:
        'instance 102 is one of 1 running prefill instances of group 0; moving it would leave 0, below the minimum of 1 (planner.min_prefill_per_group)',
    });
  });

  test('a silent instance is not moved; the role it already holds only changes its pin', async () => {
    const { controller, fake, clock } = setup();
    await rounds(controller);
    fake.agent(IPS[103]).up = false;
    clock.now += DEFAULT_TIMING.heartbeatTimeoutMs + 1;
    await rounds(controller);
    expect(refusal(() => controller.move(103, 'prefill', { by: 'operator', reason: 'x' }))).toMatchObject({
      status: 409,
      message: 'instance 103 is not answering: a move drains and switches a running instance',
    });
    expect(controller.move(101, 'decode', { by: 'operator', reason: 'pin' })).toMatchObject({ outcome: 'pinned', move: { pinned: true } });
    expect(controller.move(101, 'decode', { by: 'operator', reason: 'pin' }).outcome).toBe('unchanged');
    expect(controller.move(101, 'decode', { by: 'operator', reason: 'unpin', pin: false })).toMatchObject({
      outcome: 'pinned',
      move: { pinned: false },
    });
    expect(controller.moves.current).toBeUndefined();
  });

  test('an instance whose requests do not end is switched at the drain timeout', async () => {
    const { controller, fake, clock } = setup();
    await rounds(controller);
    fake.agent(IPS[101]).resource = { ...BUSY };
    controller.move(101, 'prefill', { by: 'planner', reason: 'prefill saturated' });
    await rounds(controller);
    expect(fake.agent(IPS[101]).role).toBe('decode');
    clock.now += DEFAULT_TIMING.drainTimeoutMs;
    await rounds(controller);
    expect(fake.agent(IPS[101]).role).toBe('prefill');
    expect(fake.snapshotRoles).toContain('101:P');
    // The planner's move does not pin.
    expect(controller.moves.history[0]).toMatchObject({ id: 101, by: 'planner', pinned: false, outcome: 'done' });
  });

  test('a removal during a move calls the move off', async () => {
    const { controller, fake } = setup();
    await rounds(controller);
    fake.agent(IPS[100]).resource = { ...BUSY };
    controller.move(100, 'decode', { by: 'operator', reason: 'x' });
    await rounds(controller);
    void controller.remove(100, { force: true });
    await rounds(controller);
    expect(controller.moves.history[0]).toMatchObject({ id: 100, outcome: 'cancelled' });
    expect(controller.moves.current).toBeUndefined();
  });

  test('a move not ready in time is given up; the instance keeps its new role', async () => {
    const { controller, fake, clock, logs } = setup();
    await rounds(controller);
    fake.agent(IPS[100]).ready = false;
    controller.move(100, 'decode', { by: 'operator', reason: 'x' });
    await rounds(controller);
    expect(fake.agent(IPS[100]).role).toBe('decode');
    clock.now += 120_000;
    await rounds(controller);
    expect(controller.moves.history[0]).toMatchObject({ id: 100, outcome: 'timed_out' });
    expect(logs.some((l) => l.includes('move prefill → decode timed out') && l.includes('it keeps the new role'))).toBe(true);
    fake.agent(IPS[100]).ready = true;
    await rounds(controller);
    expect(fake.snapshotRoles).toContain('100:D');
  });
});

describe('a move across a change of leader', () => {
  test('a new leader finishes a move stored while draining: still out of the snapshot, switched once idle', async () => {
    const fake = new FakeAgentCluster();
    const clock = { now: 1_000_000 };
    const a = setup({ fake, clock });
    await rounds(a.controller);
    fake.agent(IPS[100]).resource = { ...BUSY };
    a.controller.move(100, 'decode', { by: 'planner', reason: 'x' });
    await rounds(a.controller);
    const state = a.controller.storedState();
    await a.controller.close();
    expect(state.assignments.find((x) => x.id === 100)!.move).toMatchObject({ phase: 'draining', to: 'decode' });

    const b = setup({ fake, clock, leading: false });
    await rounds(b.controller);
    b.controller.lead(JSON.parse(JSON.stringify(state)));
    await rounds(b.controller);
    expect(b.controller.moves.current).toMatchObject({ id: 100, phase: 'draining' });
    expect(fake.last.ids).not.toContain(100);
    fake.agent(IPS[100]).resource = { ...IDLE };
    await rounds(b.controller);
    expect(b.controller.moves.current).toBeUndefined();
    expect(b.controller.moves.history[0]).toMatchObject({ id: 100, to: 'decode', outcome: 'done' });
    expect(fake.snapshotRoles).toEqual(['100:D', '101:D', '102:P', '103:D']);
  });

  test('a new leader finishes a move stored while switching, and numbers its next move after it', async () => {
    const fake = new FakeAgentCluster();
    const clock = { now: 1_000_000 };
    const a = setup({ fake, clock });
    await rounds(a.controller);
    fake.agent(IPS[100]).ready = false;
    a.controller.move(100, 'decode', { by: 'planner', reason: 'x' });
    await rounds(a.controller);
    const state = a.controller.storedState();
    await a.controller.close();
    expect(state.assignments.find((x) => x.id === 100)).toMatchObject({ role: 'decode', move: { phase: 'switching', seq: 1 } });

    const b = setup({ fake, clock, leading: false });
    const pushed = fake.refreshes.length;
    b.controller.lead(JSON.parse(JSON.stringify(state)));
    await rounds(b.controller);
    expect(b.controller.moves.current).toMatchObject({ id: 100, phase: 'switching' });
    // The moving instance is out of the snapshot by decision: the new leader does not hold its snapshots for it.
    expect(fake.refreshes.length).toBeGreaterThan(pushed);
    expect(fake.last.ids).toEqual([101, 102, 103]);
    fake.agent(IPS[100]).ready = true;
    await rounds(b.controller);
    expect(b.controller.moves.history[0]).toMatchObject({ id: 100, outcome: 'done' });
    expect(fake.snapshotRoles).toContain('100:D');
    expect(b.controller.move(101, 'prefill', { by: 'operator', reason: 'y' }).move).toMatchObject({ seq: 2 });
  });
});
