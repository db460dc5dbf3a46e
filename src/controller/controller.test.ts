import { describe, expect, test } from 'bun:test';
import { Controller } from './controller.ts';
import type { Outgoing, OutgoingReply } from './outgoing.ts';
import type { RefreshBody } from './snapshot.ts';
import { DEFAULT_TIMING, type TopologySpec, type DesiredInstance } from './types.ts';

/** A fake agent: answers status from what was posted; every posted peer that is up counts as linked. */
interface FakeAgent {
  up: boolean;
  role: string;
  peers: string[];
  ready: boolean;
  resource?: { totalSlotsNum: number; availSlotsNum: number; totalBlockNum: number; availBlockNum: number };
}

class FakeCluster implements Outgoing {
  readonly agents = new Map<string, FakeAgent>();
  readonly posts: { host: string; role: string; peers: string[] }[] = [];
  readonly refreshes: RefreshBody[] = [];
  coordinatorReady = 200;

  agent(ip: string): FakeAgent {
    let a = this.agents.get(ip);
    if (a === undefined) this.agents.set(ip, (a = { up: true, role: 'none', peers: [], ready: true }));
    return a;
  }

  async get(url: string): Promise<OutgoingReply> {
    const u = new URL(url);
    if (u.pathname === '/v1/readiness') return { status: this.coordinatorReady, body: {} };
    const a = this.agent(u.hostname);
    if (!a.up) throw new Error('connection refused');
    const peers = a.peers.map((p) => ({ target: p, device: 0, link: this.agent(p).up && a.ready ? 'ok' : 'linking' }));
    return {
      status: 200,
      body: {
        service: {
          roleStatus: a.role === 'none' ? 'RoleUnknown' : a.ready ? 'RoleReady' : 'RoleSwitching',
          currentRole: a.role,
          queuedPosts: 0,
        },
        linkStatus: { peers },
        ...(a.resource === undefined ? {} : { resource: a.resource }),
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
    if (!a.up) throw new Error('connection refused');
    const b = body as { peers: { server_ip: string }[] };
    a.role = u.pathname.split('/').at(-1)!;
    a.peers = b.peers.map((p) => p.server_ip);
    this.posts.push({ host: u.hostname, role: a.role, peers: a.peers });
    return { status: 200, body: { result: 'OK' } };
  }

  get last(): RefreshBody {
    return this.refreshes.at(-1) ?? { ids: [], instances: [] };
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

function setup(instances: DesiredInstance[]): {
  controller: Controller;
  fake: FakeCluster;
  clock: { now: number };
  logs: string[];
  spec: TopologySpec;
} {
  const fake = new FakeCluster();
  const clock = { now: 1_000_000 };
  const logs: string[] = [];
  const spec: TopologySpec = { coordinators: ['http://127.0.0.1:1026'], timing: DEFAULT_TIMING, rates: { p: 0, d: 0 }, instances };
  const controller = new Controller({ spec, client: fake, now: () => clock.now, log: (line) => logs.push(line) });
  return { controller, fake, clock, logs, spec };
}

const busy = { totalSlotsNum: 8, availSlotsNum: 7, totalBlockNum: 64, availBlockNum: 60 };
const idle = { totalSlotsNum: 8, availSlotsNum: 8, totalBlockNum: 64, availBlockNum: 64 };

/** Runs poll rounds until the event loop has nothing left from them (no timers involved). */
async function rounds(controller: Controller, n = 6): Promise<void> {
  for (let i = 0; i < n; i++) {
    controller.tick();
    for (let j = 0; j < 5; j++) await new Promise((resolve) => setImmediate(resolve));
  }
}

const P = '10.0.0.1';
const D = '10.0.0.2';
const D2 = '10.0.0.3';

describe('Controller', () => {
  test('posts roles with group peers, then snapshots ready instances with their linked peers', async () => {
    const { controller, fake } = setup([instance(1, P, 'prefill'), instance(2, D, 'decode')]);
    await rounds(controller);
    expect(fake.agent(P)).toMatchObject({ role: 'prefill', peers: [D] });
    expect(fake.agent(D)).toMatchObject({ role: 'decode', peers: [P] });
    expect(fake.last.ids).toEqual([1, 2]);
    expect(fake.last.instances.map((i) => i.dynamic_info.peers)).toEqual([[2], [1]]);
    expect(controller.view().members.map((m) => m.state)).toEqual(['serving', 'serving']);
  });

  test('an instance not RoleReady stays out of the snapshot', async () => {
    const { controller, fake } = setup([instance(1, P, 'prefill'), instance(2, D, 'decode')]);
    fake.agent(D).ready = false;
    await rounds(controller);
    expect(fake.last.ids).toEqual([]);
    expect(controller.view().members.find((m) => m.id === 2)!.state).toBe('linking');
  });

  test('dynamic_info comes from the agent resource block', async () => {
    const { controller, fake } = setup([instance(1, P, 'prefill'), instance(2, D, 'decode')]);
    fake.agent(D).resource = { totalSlotsNum: 16, availSlotsNum: 5, totalBlockNum: 100, availBlockNum: 40 };
    await rounds(controller);
    const d = fake.last.instances.find((i) => i.id === 2)!;
    expect(d.static_info.total_slots_num).toBe(16);
    expect(d.dynamic_info).toMatchObject({ avail_slots_num: 5, avail_block_num: 40 });
  });

  test('heartbeat timeout: a silent D leaves the snapshot and its P is posted without it; back, it gets its role and rejoins', async () => {
    const { controller, fake, clock } = setup([instance(1, P, 'prefill'), instance(2, D, 'decode'), instance(3, D2, 'decode')]);
    await rounds(controller);
    expect(fake.last.ids).toEqual([1, 2, 3]);
    fake.agent(D2).up = false;
    await rounds(controller, 2);
    // Within the timeout nothing changes: one missed poll is not a death.
    expect(fake.last.ids).toEqual([1, 2, 3]);
    clock.now += DEFAULT_TIMING.heartbeatTimeoutMs + 1;
    await rounds(controller);
    expect(fake.last.ids).toEqual([1, 2]);
    expect(fake.agent(P).peers).toEqual([D]);
    expect(controller.view().members.find((m) => m.id === 3)!.state).toBe('down');

    // It restarted: no role until the controller posts it, at once rather than at the next retry.
    Object.assign(fake.agent(D2), { up: true, role: 'none', peers: [] });
    await rounds(controller);
    expect(fake.agent(D2)).toMatchObject({ role: 'decode', peers: [P] });
    expect(fake.agent(P).peers).toEqual([D, D2]);
    expect(fake.last.ids).toEqual([1, 2, 3]);
  });

  test('an agent that restarted within the heartbeat timeout is noticed by its empty role and posted again', async () => {
    const { controller, fake } = setup([instance(1, P, 'prefill'), instance(2, D, 'decode')]);
    await rounds(controller);
    const posts = fake.posts.length;
    Object.assign(fake.agent(D), { role: 'none', peers: [] });
    await rounds(controller);
    expect(fake.posts.length).toBeGreaterThan(posts);
    expect(fake.agent(D)).toMatchObject({ role: 'decode', peers: [P] });
  });

  test('a D linked to none of its P is faulty and left out', async () => {
    const { controller, fake } = setup([instance(1, P, 'prefill'), instance(2, D, 'decode')]);
    await rounds(controller);
    // The links drop while the role stays: the agent reports them linking.
    fake.agent(D).peers = [];
    fake.agent(P).peers = [];
    await rounds(controller, 1);
    expect(fake.last.ids).toEqual([]);
    expect(controller.view().members.map((m) => m.state)).toEqual(['waiting', 'faulty']);
  });

  test('a refused role post is retried after the retry period, not before', async () => {
    const { controller, fake, clock } = setup([instance(1, P, 'prefill'), instance(2, D, 'decode')]);
    const post = fake.post.bind(fake);
    let refuse = true;
    fake.post = async (url, body) => (refuse && url.includes('/v1/role/') ? { status: 503, body: { error: 'busy' } } : post(url, body));
    await rounds(controller);
    expect(controller.view().members[0]!.lastError?.message).toContain('503');
    refuse = false;
    await rounds(controller);
    expect(fake.agent(P).role).toBe('none');
    clock.now += DEFAULT_TIMING.roleRetryMs;
    await rounds(controller);
    expect(fake.agent(P).role).toBe('prefill');
  });

  test('a D is posted only once the posts to its P have answered', async () => {
    const { controller, fake } = setup([instance(1, P, 'prefill'), instance(2, D, 'decode')]);
    const post = fake.post.bind(fake);
    const held = Promise.withResolvers<void>();
    fake.post = async (url, body) => {
      if (url.includes(P) && url.includes('/v1/role/')) await held.promise;
      return post(url, body);
    };
    await rounds(controller);
    expect(fake.posts).toEqual([]);
    held.resolve();
    await rounds(controller);
    expect(fake.posts.map((p) => p.host)).toEqual([P, D]);
  });

  test('open roles follow the rates and groups; the role stays when the cluster grows', async () => {
    const { controller, fake } = setup([instance(1, P), instance(2, D)]);
    await rounds(controller);
    expect([fake.agent(P).role, fake.agent(D).role]).toEqual(['prefill', 'decode']);
    controller.add(instance(3, D2));
    await rounds(controller);
    expect([fake.agent(P).role, fake.agent(D).role, fake.agent(D2).role]).toEqual(['prefill', 'decode', 'prefill']);
  });

  test('a drain leaves the snapshot first, waits for the engine to be idle, then unlinks', async () => {
    const { controller, fake } = setup([instance(1, P, 'prefill'), instance(2, D, 'decode'), instance(3, D2, 'decode')]);
    fake.agent(D2).resource = { totalSlotsNum: 8, availSlotsNum: 7, totalBlockNum: 64, availBlockNum: 60 };
    await rounds(controller);
    let done = false;
    void controller.remove(3).then(() => (done = true));
    await rounds(controller);
    expect(fake.last.ids).toEqual([1, 2]);
    // Busy: links stay.
    expect(done).toBe(false);
    expect(fake.agent(P).peers).toEqual([D, D2]);
    fake.agent(D2).resource = { totalSlotsNum: 8, availSlotsNum: 8, totalBlockNum: 64, availBlockNum: 64 };
    await rounds(controller);
    expect(done).toBe(true);
    expect(fake.agent(P).peers).toEqual([D]);
    expect(fake.agent(D2).peers).toEqual([]);
    expect(controller.view().members.map((m) => m.id)).toEqual([1, 2]);
  });

  test('a Coordinator whose readiness is 503 gets the snapshot at once', async () => {
    const { controller, fake } = setup([instance(1, P, 'prefill'), instance(2, D, 'decode')]);
    await rounds(controller);
    const sent = fake.refreshes.length;
    fake.coordinatorReady = 503;
    await rounds(controller, 1);
    expect(fake.refreshes.length).toBeGreaterThan(sent);
  });

  test('add refuses an id or a server_ip already taken, changing nothing', () => {
    const { controller } = setup([instance(1, P, 'prefill')]);
    expect(() => controller.add(instance(1, D))).toThrow(/already exists/);
    expect(() => controller.add(instance(2, P))).toThrow(/server_ip/);
    expect(controller.view().members.map((m) => m.id)).toEqual([1]);
    expect(() => controller.remove(9)).toThrow(/not found/);
  });

  test('instances put back in the topology while they drain stay: the drain is called off, and the change says so', async () => {
    const P2 = '10.0.0.4';
    const all = [instance(1, P, 'prefill'), instance(2, D, 'decode'), instance(3, D2, 'decode'), instance(4, P2, 'prefill')];
    const { controller, fake, logs, spec } = setup(all);
    for (const ip of [D2, P2]) fake.agent(ip).resource = busy;
    await rounds(controller);
    expect(fake.last.ids).toEqual([1, 2, 3, 4]);
    const without = { ...spec, instances: all.slice(0, 2) };
    expect(controller.apply(spec, without)).toEqual({
      applied: true,
      change: { added: [], removed: [3, 4], updated: [], drainsCancelled: [] },
    });
    await rounds(controller);
    expect(fake.last.ids).toEqual([1, 2]);
    expect(controller.view().members.map((m) => m.state)).toEqual(['serving', 'serving', 'draining', 'draining']);
    // Back in the file while still busy, so still draining.
    const drained = controller.remove(3, { force: true });
    expect(controller.apply(without, spec)).toEqual({
      applied: true,
      change: { added: [], removed: [], updated: [], drainsCancelled: [3, 4] },
    });
    expect(await drained).toBe('cancelled');
    expect(logs).toContain('topology change: back in the topology while draining, so kept: 3, 4');
    // Idle now: a drain would have finished and removed them; they stay and serve.
    for (const ip of [D2, P2]) fake.agent(ip).resource = idle;
    await rounds(controller);
    expect(controller.view().members.map((m) => [m.id, m.state])).toEqual([
      [1, 'serving'],
      [2, 'serving'],
      [3, 'serving'],
      [4, 'serving'],
    ]);
    expect(fake.last.ids).toEqual([1, 2, 3, 4]);
    expect(fake.agent(P).peers).toEqual([D, D2]);
  });

  test('one change may not remove more than max_removed_fraction of the instances: refused whole, unless forced', async () => {
    const all = [instance(1, P, 'prefill'), instance(2, D, 'decode'), instance(3, D2, 'decode'), instance(4, '10.0.0.4', 'prefill')];
    const { controller, fake, logs, spec } = setup(all);
    await rounds(controller);
    const empty = { ...spec, instances: [] };
    const refused = controller.apply(spec, empty);
    expect(refused).toMatchObject({ applied: false, change: { removed: [1, 2, 3, 4] } });
    expect(logs.at(-1)).toBe(
      'topology change refused: it removes 4 of 4 instances (100%), more than max_removed_fraction 0.5 allows (instances 1, 2, 3, 4); ' +
        'raise max_removed_fraction in the file, or apply it once with POST /v1/cluster/reload?force=true',
    );
    await rounds(controller);
    expect(fake.last.ids).toEqual([1, 2, 3, 4]);
    expect(controller.view().members.every((m) => m.state === 'serving')).toBe(true);
    // Half is within the default guard; three of four is not, unless the file raises it or the change is forced.
    expect(controller.apply(spec, { ...spec, instances: all.slice(0, 1) }).applied).toBe(false);
    expect(controller.apply(spec, { ...spec, instances: all.slice(0, 1), maxRemovedFraction: 0.75 }).applied).toBe(true);
    expect(
      controller
        .view()
        .members.filter((m) => m.state === 'draining')
        .map((m) => m.id),
    ).toEqual([2, 3, 4]);
    const two = setup(all.slice(0, 2));
    await rounds(two.controller);
    expect(two.controller.apply(two.spec, { ...two.spec, instances: [] }, { force: true })).toMatchObject({
      applied: true,
      change: { removed: [1, 2] },
    });
  });

  test('a changed topology whose instances clash with running ones is refused whole', async () => {
    const { controller, spec } = setup([instance(1, P, 'prefill'), instance(2, D, 'decode')]);
    controller.add(instance(5, '10.0.0.5', 'decode'));
    // The file adds an instance on the API-added one's agent.
    const clash = { ...instance(6, '10.0.0.6', 'decode'), manageUrl: 'http://10.0.0.5:2000' };
    const outcome = controller.apply(spec, { ...spec, instances: [...spec.instances, clash] });
    expect(outcome).toMatchObject({
      applied: false,
      issues: [{ path: 'instances[2].manage_url', message: "manage_url http://10.0.0.5:2000 is already instance 5's" }],
    });
    expect(controller.view().members.map((m) => m.id)).toEqual([1, 2, 5]);
  });
});
