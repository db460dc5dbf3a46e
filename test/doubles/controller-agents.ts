/**
 * Fake instance agents and Coordinators behind the controller's one client (Outgoing), for unit
 * tests of the controller loop without sockets: an agent answers status from what was posted to it
 * (every posted peer that is up counts as linked once the agent is ready), keeps a log of the role
 * posts it took, and reports the resources a test sets (busy or idle); a Coordinator takes every
 * snapshot and keeps it. `rounds()` runs poll rounds until the event loop has nothing left of them.
 */
import type { Controller } from '../../src/controller/controller.ts';
import type { Outgoing, OutgoingReply } from '../../src/controller/outgoing.ts';
import type { RefreshBody } from '../../src/controller/snapshot.ts';
import type { DesiredInstance } from '../../src/controller/types.ts';
import type { Role } from '../../src/schema/role.ts';

export interface FakeAgent {
  up: boolean;
  role: string;
  peers: string[];
  /** Links come up (RoleReady) once posted; false holds the agent in RoleSwitching. */
  ready: boolean;
  resource: { totalSlotsNum: number; availSlotsNum: number; totalBlockNum: number; availBlockNum: number };
}

export const IDLE = { totalSlotsNum: 8, availSlotsNum: 8, totalBlockNum: 64, availBlockNum: 64 };
export const BUSY = { totalSlotsNum: 8, availSlotsNum: 6, totalBlockNum: 64, availBlockNum: 50 };

export class FakeAgentCluster implements Outgoing {
  readonly agents = new Map<string, FakeAgent>();
  /** Every role post, in order, and every snapshot taken. */
  readonly posts: { host: string; role: string; peers: string[] }[] = [];
  readonly refreshes: RefreshBody[] = [];
  /** Posts and snapshots in the order they happened: `post <ip> <role>`, `refresh <id>,<id>`. */
  readonly order: string[] = [];

  agent(ip: string): FakeAgent {
    let a = this.agents.get(ip);
    if (a === undefined) this.agents.set(ip, (a = { up: true, role: 'none', peers: [], ready: true, resource: { ...IDLE } }));
    return a;
  }

  async get(url: string): Promise<OutgoingReply> {
    const u = new URL(url);
    if (u.pathname === '/v1/readiness') return { status: 200, body: {} };
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
        resource: a.resource,
      },
    };
  }

  async post(url: string, body: unknown): Promise<OutgoingReply> {
    const u = new URL(url);
    if (u.pathname === '/v1/instances/refresh') {
      this.refreshes.push(body as RefreshBody);
      this.order.push(`refresh ${(body as RefreshBody).ids.join(',')}`);
      return { status: 200, body: undefined };
    }
    const a = this.agent(u.hostname);
    if (!a.up) throw new Error('connection refused');
    a.role = u.pathname.split('/').at(-1)!;
    a.peers = (body as { peers: { server_ip: string }[] }).peers.map((p) => p.server_ip);
    this.posts.push({ host: u.hostname, role: a.role, peers: a.peers });
    this.order.push(`post ${u.hostname} ${a.role}`);
    return { status: 200, body: { result: 'OK' } };
  }

  /** The last snapshot taken. */
  get last(): RefreshBody {
    return this.refreshes.at(-1) ?? { ids: [], instances: [] };
  }

  /** Role of each instance in the last snapshot, `id:P|D`. */
  get snapshotRoles(): string[] {
    return this.last.instances.map((i) => `${i.id}:${i.static_info.role === 80 ? 'P' : 'D'}`);
  }
}

/**
 * A desired instance on `ip` (one device); `role` undefined leaves it to the P:D rates.
 * @example fakeInstance(100, '10.0.0.1')
 */
export function fakeInstance(id: number, ip: string, role?: Role): DesiredInstance {
  return {
    id,
    manageUrl: `http://${ip}:2000`,
    inferenceUrl: `http://${ip}:3000`,
    modelName: 'm',
    serverIp: ip,
    devices: [{ logicalId: '0', ip }],
    role,
    staticInfo: { maxSeqLen: 4096, maxOutputLen: 1024, totalSlots: 8, totalBlocks: 64, blockSize: 16 },
  };
}

/** Runs poll rounds until the event loop has nothing left from them (no timers involved). */
export async function rounds(controller: Controller, n = 6): Promise<void> {
  for (let i = 0; i < n; i++) {
    controller.tick();
    for (let j = 0; j < 5; j++) await new Promise((resolve) => setImmediate(resolve));
  }
}
