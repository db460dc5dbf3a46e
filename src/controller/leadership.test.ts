import { describe, expect, test } from 'bun:test';
import { readChunked } from '../store/chunked.ts';
import { MemoryStore } from '../store/memory.ts';
import { KEYS, type Store } from '../store/store.ts';
import { Controller } from './controller.ts';
import { Leadership } from './leadership.ts';
import type { Outgoing, OutgoingReply } from './outgoing.ts';
import type { RefreshBody } from './snapshot.ts';
import { decodeRecords } from './stored-state.ts';
import { DEFAULT_TIMING, type TopologySpec, type DesiredInstance } from './types.ts';

/** Agents that answer status from what was posted (every posted peer linked), and Coordinators that take snapshots. */
class FakeCluster implements Outgoing {
  readonly agents = new Map<string, { role: string; peers: string[] }>();
  readonly posts: string[] = [];
  readonly refreshes: RefreshBody[] = [];

  agent(ip: string): { role: string; peers: string[] } {
    let a = this.agents.get(ip);
    if (a === undefined) this.agents.set(ip, (a = { role: 'none', peers: [] }));
    return a;
  }

  async get(url: string): Promise<OutgoingReply> {
    const u = new URL(url);
    if (u.pathname === '/v1/readiness') return { status: 200, body: {} };
    const a = this.agent(u.hostname);
    return {
      status: 200,
      body: {
        service: { roleStatus: a.role === 'none' ? 'RoleUnknown' : 'RoleReady', currentRole: a.role, queuedPosts: 0 },
        linkStatus: { peers: a.peers.map((p) => ({ target: p, device: 0, link: 'ok' })) },
      },
    };
  }

  async post(url: string, body: unknown): Promise<OutgoingReply> {
    const u = new URL(url);
    if (u.pathname === '/v1/instances/refresh') {
      this.refreshes.push(body as RefreshBody);
      return { status: 200, body: undefined };
    }
    const a = this.agent(u.hostname);
    a.role = u.pathname.split('/').at(-1)!;
    a.peers = (body as { peers: { server_ip: string }[] }).peers.map((p) => p.server_ip);
    this.posts.push(u.hostname);
    return { status: 200, body: { result: 'OK' } };
  }
}

const instance = (id: number, ip: string, role?: 'prefill' | 'decode'): DesiredInstance => ({
  id,
  manageUrl: `http://${ip}:2000`,
  inferenceUrl: `http://${ip}:3000`,
  modelName: 'm',
  serverIp: ip,
  devices: [{ logicalId: '0', ip }],
  role,
  staticInfo: { maxSeqLen: 4096, maxOutputLen: 1024, totalSlots: 8, totalBlocks: 64, blockSize: 16 },
});

// Roles left to the P:D rates, so a new leader that ignored the stored roles could pick others.
const SPEC: TopologySpec = {
  coordinators: ['http://127.0.0.1:1026'],
  timing: DEFAULT_TIMING,
  rates: { p: 1, d: 1 },
  instances: [instance(1, '10.0.0.1'), instance(2, '10.0.0.2')],
};

/** The stored state as a new leader reads it (undefined: nothing complete is stored). */
async function stored(store: Store): Promise<ReturnType<typeof decodeRecords> | undefined> {
  const read = await readChunked(await store.list(KEYS.controllerState), KEYS.controllerState);
  return read.ok ? decodeRecords(read.records, read.meta) : undefined;
}

async function rounds(controller: Controller, n = 6): Promise<void> {
  for (let i = 0; i < n; i++) {
    controller.tick();
    for (let j = 0; j < 5; j++) await new Promise((resolve) => setImmediate(resolve));
  }
}

async function eventually(check: () => boolean, what: string): Promise<void> {
  for (let i = 0; i < 2000 && !check(); i++) await new Promise((resolve) => setTimeout(resolve, 5));
  if (!check()) throw new Error(`never: ${what}`);
}

describe('Controller leading and standing by', () => {
  test('a standby polls but posts no role and pushes no snapshot', async () => {
    const fake = new FakeCluster();
    const standby = new Controller({ spec: SPEC, client: fake, leading: false });
    await rounds(standby);
    expect(await standby.sync()).toBe(false);
    expect(fake.posts).toEqual([]);
    expect(fake.refreshes).toEqual([]);
    expect(standby.view().members.every((m) => m.reachable)).toBe(true);
    await standby.close();
  });

  test('a new leader from the stored state posts no role already in force and continues the generation', async () => {
    const fake = new FakeCluster();
    const first = new Controller({ spec: SPEC, client: fake });
    await rounds(first);
    expect(fake.posts.length).toBe(2);
    expect(fake.refreshes.at(-1)!.ids).toEqual([1, 2]);
    const stored = first.storedState();
    await first.close();

    const next = new Controller({ spec: SPEC, client: fake, leading: false });
    await rounds(next);
    const pushedBefore = fake.refreshes.length;
    next.lead(stored);
    await rounds(next);
    expect(fake.posts.length).toBe(2);
    expect(fake.refreshes.length).toBeGreaterThan(pushedBefore);
    expect(fake.refreshes.at(-1)!.ids).toEqual([1, 2]);
    expect(next.generation).toBeGreaterThan(stored.generation);
    expect(next.view().members.map((m) => [m.role, m.state])).toEqual(first.view().members.map((m) => [m.role, 'serving']));
    await next.close();
  });

  test('a new leader without stored assignments posts every role again (what the stored state saves)', async () => {
    const fake = new FakeCluster();
    const first = new Controller({ spec: SPEC, client: fake });
    await rounds(first);
    await first.close();
    const next = new Controller({ spec: SPEC, client: fake, leading: false });
    await rounds(next);
    next.lead({ desired: undefined, assignments: [], generation: 0 });
    await rounds(next);
    expect(fake.posts.length).toBe(4);
    await next.close();
  });

  test('a role a restarted agent lost is posted by the new leader even though the store says it was in force', async () => {
    const fake = new FakeCluster();
    const first = new Controller({ spec: SPEC, client: fake });
    await rounds(first);
    const stored = first.storedState();
    await first.close();
    fake.agent('10.0.0.2').role = 'none';
    const next = new Controller({ spec: SPEC, client: fake, leading: false });
    await rounds(next);
    next.lead(stored);
    await rounds(next);
    expect(fake.posts).toEqual(['10.0.0.1', '10.0.0.2', '10.0.0.2']);
    await next.close();
  });
});

describe('Leadership', () => {
  function candidate(
    store: MemoryStore,
    fake: FakeCluster,
    url: string,
    spec: TopologySpec = SPEC,
  ): { controller: Controller; leadership: Leadership } {
    let leadership: Leadership | undefined;
    const controller = new Controller({
      spec,
      client: fake,
      leading: false,
      events: { rolePost: () => leadership?.rolePosted(), composed: (s, g) => leadership?.composed(s, g) },
      mayAct: () => leadership?.mayAct() ?? false,
    });
    leadership = new Leadership({ controller, store, url, ttlSeconds: 60, fileSpec: () => spec });
    return { controller, leadership };
  }

  test('one of two leads and keeps its state in the store; when it goes, the other leads without re-posting roles', async () => {
    const store = new MemoryStore();
    const fake = new FakeCluster();
    const a = candidate(store, fake, 'http://a');
    const b = candidate(store, fake, 'http://b');
    a.leadership.start();
    await eventually(() => a.controller.leading, 'a leads');
    b.leadership.start();
    a.controller.start();
    b.controller.start();
    await eventually(() => fake.refreshes.at(-1)?.ids.length === 2, 'a snapshot with both instances');
    expect(b.controller.leading).toBe(false);
    expect(b.leadership.view()).toMatchObject({ state: 'standby', leader: 'http://a', store: 'memory' });
    await eventually(() => (a.controller.storedState().assignments.every((x) => x.joined) ? true : false), 'joined');
    // The state reaches the store after the posts and the snapshot.
    let read: Awaited<ReturnType<typeof stored>>;
    await eventually(() => {
      void stored(store).then((v) => (read = v));
      return read !== undefined && read.state.assignments.length === 2 && read.state.assignments.every((x) => x.joined);
    }, 'assignments stored');
    expect(read!.state.snapshot?.ids).toEqual([1, 2]);
    expect(read!.state.generation).toBeGreaterThan(0);

    await a.leadership.close();
    await a.controller.close();
    const pushed = fake.refreshes.length;
    await eventually(() => b.controller.leading, 'b leads');
    await eventually(() => fake.refreshes.length > pushed, 'b pushes a snapshot');
    expect(fake.refreshes.at(-1)!.ids).toEqual([1, 2]);
    expect(fake.posts.length).toBe(2);
    expect(b.leadership.view()).toMatchObject({ state: 'leader', leader: 'http://b' });
    await b.leadership.close();
    await b.controller.close();
    await store.close();
  });

  test('a new leader whose topology file differs from the stored one applies the difference as a reload would', async () => {
    const store = new MemoryStore();
    const fake = new FakeCluster();
    const a = candidate(store, fake, 'http://a');
    a.leadership.start();
    a.controller.start();
    await eventually(() => fake.refreshes.at(-1)?.ids.length === 2, 'a snapshot with both instances');
    let file: unknown[] | undefined;
    await eventually(() => {
      void stored(store).then((v) => (file = v?.file));
      return file?.length === 2;
    }, 'the file stored');
    await a.leadership.close();
    await a.controller.close();

    const edited: TopologySpec = { ...SPEC, instances: [...SPEC.instances, instance(3, '10.0.0.3', 'decode')] };
    const b = candidate(store, fake, 'http://b', edited);
    b.leadership.start();
    b.controller.start();
    await eventually(() => fake.refreshes.at(-1)?.ids.length === 3, 'a snapshot with the added instance');
    expect(b.controller.view().desired.map((d) => d.id)).toEqual([1, 2, 3]);
    await b.leadership.close();
    await b.controller.close();
    await store.close();
  });
});
