/**
 * HA at the shape users run: a three-member etcd, fake agents for thousands of instances (one
 * listener in a process of its own, see fake-agents.ts) with 8 devices and long model names, two active/active `pdlink
 * coordinator` processes and two `pdlink controller` processes sharing the cluster's keys. What the
 * scale test and the growth research read: who leads, the role posts the agents took, what each
 * Coordinator holds, the state writes by result, the stored state as a new leader reads it, and
 * etcd's database size.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { decodeRecords } from '../../src/controller/stored-state.ts';
import { launchEnv } from '../../src/platform/launch-env.ts';
import { readChunked } from '../../src/store/chunked.ts';
import { EtcdStore } from '../../src/store/etcd.ts';
import { KEYS } from '../../src/store/store.ts';
import { spawnListening, until, type ManagedProcess } from '../../src/sim/cluster/process.ts';
import { TestEtcd } from './etcd.ts';
import { FakeAgentsClient, type FakeAgentsOptions } from './fake-agents.ts';

const REPO_ROOT = join(import.meta.dir, '..', '..');
const CLUSTER = 'scale';

export interface HaScaleOptions extends FakeAgentsOptions {
  /** etcd's --quota-backend-bytes (default etcd's own). */
  readonly quotaBytes?: number;
  /** pdlink.store.etcd.compaction_seconds (default pdlink's). */
  readonly compactionSeconds?: number;
  /** pdlink.store.etcd.lease_ttl_seconds (default 2). */
  readonly ttlSeconds?: number;
  /** The controllers' status poll, in seconds (default 1, MindIE's). */
  readonly pollSeconds?: number;
  /** The controllers' heartbeat timeout, in seconds (default 5, MindIE's). */
  readonly heartbeatSeconds?: number;
  readonly onLine?: (line: string) => void;
}

/** MindIE's timings: at thousands of instances a 0.1 s poll would be 40,000 calls a second. */
const TIMING = {
  cluster_synchronization_seconds: 1,
  role_retry_seconds: 5,
  instance_heartbeat_timeout_seconds: 5,
  status_poll_seconds: 1,
  http_timeout_seconds: 5,
  drain_timeout_seconds: 10,
};

export class HaScale {
  readonly etcd: TestEtcd;
  readonly agents: FakeAgentsClient;
  readonly coordinators: ManagedProcess[];
  readonly controllers: ManagedProcess[];
  readonly #dir: string;
  readonly #command: string[];
  readonly #onLine: ((line: string) => void) | undefined;

  private constructor(
    etcd: TestEtcd,
    agents: FakeAgentsClient,
    coordinators: ManagedProcess[],
    controllers: ManagedProcess[],
    dir: string,
    command: string[],
    onLine: ((line: string) => void) | undefined,
  ) {
    this.etcd = etcd;
    this.agents = agents;
    this.coordinators = coordinators;
    this.controllers = controllers;
    this.#dir = dir;
    this.#command = command;
    this.#onLine = onLine;
  }

  /** @example const scale = await HaScale.start({ count: 256, devices: 8, modelName: 'm'.repeat(100) }); */
  static async start(options: HaScaleOptions): Promise<HaScale> {
    const dir = mkdtempSync(join(tmpdir(), 'pdlink-ha-scale-'));
    const etcd = await TestEtcd.start({ members: 3, ...(options.quotaBytes === undefined ? {} : { quotaBytes: options.quotaBytes }) });
    const agents = await FakeAgentsClient.spawn(options);
    const started: ManagedProcess[] = [];
    const extras = options.onLine === undefined ? {} : { onLine: options.onLine };
    try {
      const etcdSection = {
        endpoints: etcd.endpoints,
        lease_ttl_seconds: options.ttlSeconds ?? 2,
        ...(options.compactionSeconds === undefined ? {} : { compaction_seconds: options.compactionSeconds }),
      };
      const pdlink = { cluster: CLUSTER, store: { etcd: etcdSection } };
      writeFileSync(join(dir, 'coordinator.json'), JSON.stringify({ pdlink }));
      const coordinators = await Promise.all(
        [0, 1].map((i) =>
          spawnListening({
            name: `coordinator-${i}`,
            command: [
              process.execPath,
              join(REPO_ROOT, 'src', 'main.ts'),
              'coordinator',
              '--config',
              join(dir, 'coordinator.json'),
              '--manage_port',
              '0',
              '--predict_port',
              '0',
            ],
            listeners: ['management', 'inference'],
            env: launchEnv(),
            cwd: dir,
            ...extras,
          }),
        ),
      );
      started.push(...coordinators);
      const topology = join(dir, 'topology.json');
      writeFileSync(
        topology,
        JSON.stringify({
          coordinators: coordinators.map((c) => c.urls['management']),
          timing: {
            ...TIMING,
            ...(options.pollSeconds === undefined ? {} : { status_poll_seconds: options.pollSeconds }),
            ...(options.heartbeatSeconds === undefined ? {} : { instance_heartbeat_timeout_seconds: options.heartbeatSeconds }),
          },
          instances: agents.entries(),
          pdlink,
        }),
      );
      const command = [process.execPath, join(REPO_ROOT, 'src', 'main.ts'), 'controller', '--config', topology, '--manage_port', '0'];
      const controllers: ManagedProcess[] = [];
      for (const i of [0, 1]) {
        controllers.push(
          await spawnListening({ name: `controller-${i}`, command, listeners: ['controller'], env: launchEnv(), ...extras }),
        );
      }
      return new HaScale(etcd, agents, coordinators, controllers, dir, command, options.onLine);
    } catch (err) {
      await Promise.all(started.map((p) => p.stop('SIGKILL')));
      agents.stop();
      await etcd.destroy();
      rmSync(dir, { recursive: true, force: true });
      throw err;
    }
  }

  /** Starts a controller again in slot `i` (after a kill). */
  async restartController(i: number): Promise<void> {
    this.controllers[i] = await spawnListening({
      name: `controller-${i}`,
      command: this.#command,
      listeners: ['controller'],
      env: launchEnv(),
      ...(this.#onLine === undefined ? {} : { onLine: this.#onLine }),
    });
  }

  /** Index of the leading controller, once exactly one leads (undefined otherwise). */
  async leader(): Promise<number | undefined> {
    const states = await Promise.all(
      this.controllers.map(async (c) => {
        if (!c.running()) return undefined;
        try {
          const res = await fetch(`${c.urls['controller']}/metrics`, { signal: AbortSignal.timeout(5000) });
          return /^pdlink_controller_leader (\d)/m.exec(await res.text())?.[1] === '1';
        } catch {
          return undefined;
        }
      }),
    );
    const leaders = states.flatMap((s, i) => (s === true ? [i] : []));
    return leaders.length === 1 ? leaders[0] : undefined;
  }

  /** Waits for one leader with every agent holding a role and both Coordinators holding every instance. */
  async settled(deadlineMs = 180_000): Promise<number> {
    let last = '';
    return until(
      async () => {
        const leader = await this.leader();
        const held = [await this.held(0), await this.held(1)];
        const { holding } = await this.agents.counts();
        last = `leader ${leader}, ${holding} agents holding a role, Coordinators hold ${held.join(' and ')}`;
        const all = holding === this.agents.count && held.every((n) => n === this.agents.count);
        return leader !== undefined && all ? leader : undefined;
      },
      deadlineMs,
      () => last,
      200,
    );
  }

  /** Instances Coordinator `i` holds (`pdlink_instances`), undefined when it does not answer. */
  async held(i: number): Promise<number | undefined> {
    try {
      const res = await fetch(`${this.coordinators[i]!.urls['management']}/metrics`, { signal: AbortSignal.timeout(5000) });
      return [...(await res.text()).matchAll(/^pdlink_instances\{[^}]*\} (\d+)/gm)].reduce((n, m) => n + Number(m[1]), 0);
    } catch {
      return undefined;
    }
  }

  /** A metric of controller `i` summed over the series whose labels contain `labels`. */
  async controllerMetric(i: number, name: string, labels = ''): Promise<number | undefined> {
    try {
      const text = await (await fetch(`${this.controllers[i]!.urls['controller']}/metrics`, { signal: AbortSignal.timeout(5000) })).text();
      let total = 0;
      for (const match of text.matchAll(new RegExp(`^${name}(\\{[^}]*\\})? (\\S+)`, 'gm'))) {
        if (labels === '' || (match[1] ?? '').includes(labels)) total += Number(match[2]);
      }
      return total;
    } catch {
      return undefined;
    }
  }

  /** The stored state as a new leader reads it (undefined when it is not complete, or etcd did not answer). */
  async stored(): Promise<ReturnType<typeof decodeRecords> | undefined> {
    const store = new EtcdStore({ endpoints: this.etcd.endpoints, cluster: CLUSTER, callDeadlineMs: 10_000 });
    try {
      const read = await readChunked(await store.list(KEYS.controllerState), KEYS.controllerState);
      return read.ok ? decodeRecords(read.records, read.meta) : undefined;
    } catch {
      return undefined;
    } finally {
      await store.close();
    }
  }

  /** Waits until the stored state is complete and says every instance joined with its body in force. */
  async storedSettled(deadlineMs: number): Promise<ReturnType<typeof decodeRecords>> {
    let last = 'nothing read';
    return until(
      async () => {
        const stored = await this.stored();
        const a = stored?.state.assignments ?? [];
        last = `${a.length} stored assignments, ${a.filter((x) => x.joined).length} joined, snapshot of ${stored?.state.snapshot?.ids.length}`;
        const n = this.agents.count;
        const done = a.length === n && a.every((x) => x.joined && x.postedKey !== undefined) && stored?.state.snapshot?.ids.length === n;
        return done ? stored : undefined;
      },
      deadlineMs,
      () => last,
      500,
    );
  }

  async stop(): Promise<void> {
    await Promise.all([...this.controllers, ...this.coordinators].map((p) => p.stop('SIGKILL')));
    this.agents.stop();
    await this.etcd.destroy();
    rmSync(this.#dir, { recursive: true, force: true });
  }
}
