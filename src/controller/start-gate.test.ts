import { describe, expect, test } from 'bun:test';
import { Controller } from './controller.ts';
import type { Outgoing, OutgoingReply } from './outgoing.ts';
import type { RefreshBody } from './snapshot.ts';
import { DEFAULT_TIMING, type DesiredInstance, type TopologySpec } from './types.ts';

/** Agents that answer status from what was posted (every posted peer linked); silent ones never answer. */
class FakeCluster implements Outgoing {
  readonly agents = new Map<string, { role: string; peers: string[] }>();
  readonly silent = new Set<string>();
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
    if (this.silent.has(u.hostname)) throw new Error('connection refused');
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
    if (this.silent.has(u.hostname)) throw new Error('connection refused');
    const a = this.agent(u.hostname);
    a.role = u.pathname.split('/').at(-1)!;
    a.peers = (body as { peers: { server_ip: string }[] }).peers.map((p) => p.server_ip);
    this.posts.push(u.hostname);
    return { status: 200, body: { result: 'OK' } };
  }
}

const instance = (id: number, ip: string, role: 'prefill' | 'decode'): DesiredInstance => ({
  id,
  manageUrl: `http://${ip}:2000`,
  inferenceUrl: `http://${ip}:3000`,
  modelName: 'm',
  serverIp: ip,
  devices: [{ logicalId: '0', ip }],
  role,
  staticInfo: { maxSeqLen: 4096, maxOutputLen: 1024, totalSlots: 8, totalBlocks: 64, blockSize: 16 },
});

const SPEC: TopologySpec = {
  coordinators: ['http://127.0.0.1:1026'],
  timing: DEFAULT_TIMING,
  rates: { p: 1, d: 1 },
  instances: [instance(1, '10.0.0.1', 'prefill'), instance(2, '10.0.0.2', 'decode'), instance(3, '10.0.0.3', 'decode')],
};

async function rounds(controller: Controller, n = 6, clock?: { now: number }, stepMs = 0): Promise<void> {
  for (let i = 0; i < n; i++) {
    if (clock !== undefined) clock.now += stepMs;
    controller.tick();
    for (let j = 0; j < 5; j++) await new Promise((resolve) => setImmediate(resolve));
  }
}

/** A cluster brought up by one controller, which is then gone (kill -9, or a restart). */
async function running(): Promise<{ fake: FakeCluster; stored: ReturnType<Controller['storedState']>; last: RefreshBody }> {
  const fake = new FakeCluster();
  const first = new Controller({ spec: SPEC, client: fake });
  await rounds(first);
  const last = fake.refreshes.at(-1)!;
  expect(last.ids).toEqual([1, 2, 3]);
  const stored = first.storedState();
  await first.close();
  fake.refreshes.length = 0;
  return { fake, stored, last };
}

describe('a controller that starts leading never pushes a snapshot that drops an instance it has not judged', () => {
  test('a lone controller restarted over a serving cluster: every snapshot it pushes holds every instance', async () => {
    const { fake } = await running();
    const restarted = new Controller({ spec: SPEC, client: fake });
    await rounds(restarted, 8);
    expect(fake.refreshes.length).toBeGreaterThan(0);
    for (const r of fake.refreshes) expect(r.ids).toEqual([1, 2, 3]);
    await restarted.close();
  });

  test('a lone controller whose instance never answers pushes nothing until the heartbeat timeout judges it dead', async () => {
    const { fake } = await running();
    fake.silent.add('10.0.0.3');
    const clock = { now: 1_000_000 };
    const restarted = new Controller({ spec: SPEC, client: fake, now: () => clock.now });
    await rounds(restarted, 6, clock, 100);
    expect(fake.refreshes).toEqual([]);
    await rounds(restarted, 60, clock, 100);
    expect(fake.refreshes.length).toBeGreaterThan(0);
    for (const r of fake.refreshes) expect(r.ids).toEqual([1, 2]);
    await restarted.close();
  });

  test('a new leader starts from the stored snapshot: an instance it has not read yet stays in with its stored entry', async () => {
    const { fake, stored, last } = await running();
    // Instance 3's agent has not answered this controller yet (slow, or this standby just started).
    fake.silent.add('10.0.0.3');
    const next = new Controller({ spec: SPEC, client: fake, leading: false });
    await rounds(next);
    next.lead({ ...stored, snapshot: last });
    await rounds(next, 3);
    expect(fake.refreshes.length).toBeGreaterThan(0);
    for (const r of fake.refreshes) expect(r.ids).toEqual([1, 2, 3]);
    // Nothing goes to the instance it has not read (its P's body, planned with live peers only, may).
    expect(fake.posts.slice(3)).not.toContain('10.0.0.3');
    await next.close();
  });

  test('a new leader with no stored snapshot pushes nothing until it has read every instance', async () => {
    const { fake, stored } = await running();
    const next = new Controller({ spec: SPEC, client: fake, leading: false });
    fake.silent.add('10.0.0.3');
    await rounds(next);
    next.lead(stored);
    await rounds(next, 3);
    expect(fake.refreshes).toEqual([]);
    fake.silent.delete('10.0.0.3');
    await rounds(next, 3);
    expect(fake.refreshes.length).toBeGreaterThan(0);
    for (const r of fake.refreshes) expect(r.ids).toEqual([1, 2, 3]);
    await next.close();
  });
});
