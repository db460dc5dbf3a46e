/**
 * A cluster with everything doubled on one real etcd: a simulated P and D, two `pdlink
 * coordinator` processes (master/standby or active/active) and two `pdlink controller` processes
 * sharing the cluster's keys. What the HA tests and the failover benchmark watch: who leads, each
 * Coordinator's readiness and generation, the role posts the agents accepted, and a load whose
 * clients move to another Coordinator when theirs refuses connections (as a load balancer would).
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { SimCluster } from '../../src/sim/cluster/cluster.ts';
import { spawnListening, until, type ManagedProcess } from '../../src/sim/cluster/process.ts';
import { launchEnv } from '../../src/platform/launch-env.ts';
import { TestEtcd } from './etcd.ts';
import { FAST_TIMING } from './controller.ts';
import { E2E_DEADLINE_MS } from './sim-cluster.ts';

export type HaMode = 'master_standby' | 'active_active';

export interface HaClusterOptions {
  readonly mode: HaMode;
  /** Lease TTL of controllers and Coordinators (default 2 s). */
  readonly ttlSeconds?: number;
  /** Members of the etcd (default 1; production runs 3, every endpoint listed). */
  readonly etcdMembers?: number;
  /** Simulated engines (default one prefill, one decode). */
  readonly prefill?: number;
  readonly decode?: number;
  readonly onLine?: (line: string) => void;
}

const REPO_ROOT = join(import.meta.dir, '..', '..');

export class HaCluster {
  readonly etcd: TestEtcd;
  readonly sim: SimCluster;
  readonly coordinators: ManagedProcess[];
  readonly controllers: ManagedProcess[];
  readonly #controllerCommand: (i: number) => string[];
  readonly #onLine: ((line: string) => void) | undefined;
  readonly #ttl: number;

  private constructor(
    etcd: TestEtcd,
    sim: SimCluster,
    coordinators: ManagedProcess[],
    controllers: ManagedProcess[],
    controllerCommand: (i: number) => string[],
    onLine: ((line: string) => void) | undefined,
    ttl: number,
  ) {
    this.etcd = etcd;
    this.sim = sim;
    this.coordinators = coordinators;
    this.controllers = controllers;
    this.#controllerCommand = controllerCommand;
    this.#onLine = onLine;
    this.#ttl = ttl;
  }

  /**
   * Starts etcd, the engines, two Coordinators and two controllers.
   * @example const ha = await HaCluster.start({ mode: 'active_active' });
   */
  static async start(options: HaClusterOptions): Promise<HaCluster> {
    const etcd = await TestEtcd.start({ members: options.etcdMembers ?? 1 });
    const ttl = options.ttlSeconds ?? 2;
    const pdlink = { cluster: 'ha', store: { etcd: { endpoints: etcd.endpoints, lease_ttl_seconds: ttl } } };
    const coordinatorConfig: Record<string, unknown> = { pdlink };
    if (options.mode === 'master_standby') coordinatorConfig['backup_config'] = { function_enable: true };
    let sim: SimCluster | undefined;
    const started: ManagedProcess[] = [];
    try {
      sim = await SimCluster.start({
        prefill: options.prefill ?? 1,
        decode: options.decode ?? 1,
        wire: false,
        coordinatorConfig,
        ...(options.onLine === undefined ? {} : { onLine: options.onLine }),
      });
      const second = await spawnListening({
        name: 'coordinator-b',
        command: sim.coordinator.child.spawnargs.map((arg, i, all) =>
          all[i - 1] === '--manage_port' || all[i - 1] === '--predict_port' ? '0' : arg,
        ),
        listeners: ['management', 'inference'],
        env: launchEnv(),
        cwd: sim.dir,
        ...(options.onLine === undefined ? {} : { onLine: options.onLine }),
      });
      started.push(second);
      const coordinators = [sim.coordinator, second];
      const topologyPath = join(sim.dir, 'ha-topology.json');
      const cluster = sim;
      writeHaTopology(topologyPath, cluster, coordinators, pdlink);
      const command = (): string[] => [
        process.execPath,
        join(REPO_ROOT, 'src', 'main.ts'),
        'controller',
        '--config',
        topologyPath,
        '--manage_port',
        '0',
      ];
      const controllers = await Promise.all(
        [0, 1].map((i) =>
          spawnListening({
            name: `controller-${i}`,
            command: command(),
            listeners: ['controller'],
            ...(options.onLine === undefined ? {} : { onLine: options.onLine }),
          }),
        ),
      );
      return new HaCluster(etcd, sim, coordinators, controllers, command, options.onLine, ttl);
    } catch (err) {
      await Promise.all(started.map((p) => p.stop('SIGKILL')));
      await sim?.stop();
      await etcd.destroy();
      throw err;
    }
  }

  /** Rewrites the controllers' topology file from the engines running now (both controllers watch it). */
  writeTopology(): void {
    const pdlink = { cluster: 'ha', store: { etcd: { endpoints: this.etcd.endpoints, lease_ttl_seconds: this.#ttl } } };
    writeHaTopology(join(this.sim.dir, 'ha-topology.json'), this.sim, this.coordinators, pdlink);
  }

  /** Starts a controller again in slot `i` (after a kill), on a new port. */
  async restartController(i: number): Promise<void> {
    this.controllers[i] = await spawnListening({
      name: `controller-${i}`,
      command: this.#controllerCommand(i),
      listeners: ['controller'],
      ...(this.#onLine === undefined ? {} : { onLine: this.#onLine }),
    });
  }

  /** Starts a Coordinator again in slot `i` (after a kill) on its former ports. */
  async restartCoordinator(i: number): Promise<void> {
    const old = this.coordinators[i]!;
    const manage = new URL(old.urls['management']!).port;
    const predict = new URL(old.urls['inference']!).port;
    this.coordinators[i] = await spawnListening({
      name: old.name,
      command: old.child.spawnargs.map((arg, k, all) =>
        all[k - 1] === '--manage_port' ? manage : all[k - 1] === '--predict_port' ? predict : arg,
      ),
      listeners: ['management', 'inference'],
      env: launchEnv(),
      cwd: this.sim.dir,
      ...(this.#onLine === undefined ? {} : { onLine: this.#onLine }),
    });
  }

  manageUrl(i: number): string {
    return this.coordinators[i]!.urls['management']!;
  }

  proxyUrl(i: number): string {
    return this.coordinators[i]!.urls['inference']!;
  }

  controllerUrl(i: number): string {
    return this.controllers[i]!.urls['controller']!;
  }

  /** Each running controller's `leadership` from GET /v1/cluster (undefined when it does not answer). */
  async leadership(): Promise<({ state: string; leader: string | null; store_connected: boolean } | undefined)[]> {
    return Promise.all(
      this.controllers.map(async (c) => {
        if (!c.running()) return undefined;
        try {
          const res = await fetch(`${c.urls['controller']}/v1/cluster`, { signal: AbortSignal.timeout(2000) });
          return ((await res.json()) as { leadership: { state: string; leader: string | null; store_connected: boolean } }).leadership;
        } catch {
          return undefined;
        }
      }),
    );
  }

  /** Index of the one leading controller, once exactly one leads and every instance serves there. */
  async leader(deadlineMs = E2E_DEADLINE_MS): Promise<number> {
    let last = '';
    return until(
      async () => {
        const views = await this.leadership();
        last = JSON.stringify(views);
        const leaders = views.flatMap((v, i) => (v?.state === 'leader' ? [i] : []));
        if (leaders.length !== 1) return undefined;
        const res = await fetch(`${this.controllerUrl(leaders[0]!)}/v1/cluster`);
        const view = (await res.json()) as { instances: { state: string }[] };
        return view.instances.length > 0 && view.instances.every((m) => m.state === 'serving') ? leaders[0] : undefined;
      },
      deadlineMs,
      () => `no single leader with every instance serving: ${last}`,
    );
  }

  /** The Coordinator's registry generation (undefined when it does not answer). */
  async generation(i: number): Promise<number | undefined> {
    try {
      const res = await fetch(`${this.manageUrl(i)}/v1/instances`, { signal: AbortSignal.timeout(2000) });
      return ((await res.json()) as { generation: number }).generation;
    } catch {
      return undefined;
    }
  }

  /** Readiness status and body of Coordinator `i` (status 0 when it does not answer). */
  async readiness(i: number): Promise<{ status: number; text: string }> {
    try {
      const res = await fetch(`${this.manageUrl(i)}/v1/readiness`, { signal: AbortSignal.timeout(2000) });
      return { status: res.status, text: await res.text() };
    } catch (err) {
      return { status: 0, text: String(err) };
    }
  }

  /** `pdlink_store_connected` of Coordinator `i`, or of controller `i` with `controller`. */
  async storeConnected(i: number, what: 'coordinator' | 'controller' = 'coordinator'): Promise<number | undefined> {
    const url = what === 'coordinator' ? this.manageUrl(i) : this.controllerUrl(i);
    try {
      const text = await (await fetch(`${url}/metrics`, { signal: AbortSignal.timeout(2000) })).text();
      const match = /^pdlink_store_connected\{[^}]*\} (\d+)/m.exec(text);
      return match === null ? undefined : Number(match[1]);
    } catch {
      return undefined;
    }
  }

  /** A metric's value (summed over its series) on controller `i`, or undefined when it does not answer. */
  async controllerMetric(i: number, name: string, labels = ''): Promise<number | undefined> {
    try {
      const text = await (await fetch(`${this.controllerUrl(i)}/metrics`, { signal: AbortSignal.timeout(2000) })).text();
      let total = 0;
      for (const match of text.matchAll(new RegExp(`^${name}(\\{[^}]*\\})? (\\S+)`, 'gm'))) {
        if (labels === '' || (match[1] ?? '').includes(labels)) total += Number(match[2]);
      }
      return total;
    } catch {
      return undefined;
    }
  }

  /** Role posts the agents accepted so far (`pdlink_role_posts_total`, summed over the engines). */
  async rolePosts(): Promise<number> {
    let total = 0;
    for (const e of this.sim.engines) {
      const text = await (await fetch(`${e.manageUrl}/metrics`)).text();
      for (const match of text.matchAll(/^pdlink_role_posts_total\{[^}]*\} (\d+)/gm)) total += Number(match[1]);
    }
    return total;
  }

  async stop(): Promise<void> {
    await Promise.all([...this.controllers, ...this.coordinators].map((p) => p.stop('SIGKILL')));
    await this.sim.stop();
    await this.etcd.destroy();
  }
}

/** Writes the controllers' topology file: every engine of `sim`, every Coordinator, the shared etcd. */
function writeHaTopology(path: string, sim: SimCluster, coordinators: readonly ManagedProcess[], pdlink: unknown): void {
  writeFileSync(
    path,
    JSON.stringify({
      coordinators: coordinators.map((c) => c.urls['management']),
      timing: FAST_TIMING,
      instances: sim.engines.map((e) => sim.topologyEntry(e)),
      pdlink,
    }),
  );
}

export interface HaOutcome {
  readonly coordinator: number;
  readonly startedAt: number;
  readonly endedAt: number;
  readonly status: number;
  readonly error: string | null;
}

/**
 * Clients sending short completions back to back, spread over the Coordinators; a
 * refused connection (the request reached nothing) is sent again to the next Coordinator, as a
 * load balancer does, and the client stays there.
 * @example const load = new HaLoad(ha, 4); ...; const outcomes = await load.stop();
 */
export class HaLoad {
  readonly outcomes: HaOutcome[] = [];
  readonly #ha: HaCluster;
  readonly #clients: Promise<void>[] = [];
  #running = true;
  #seq = 0;

  /** `spread`: client i starts on targets[i % n]; else every client starts on targets[0] (a master). */
  constructor(ha: HaCluster, clients: number, targets: readonly number[] = [0, 1], spread = true) {
    this.#ha = ha;
    for (let c = 0; c < clients; c++) this.#clients.push(this.#client(targets, spread ? c % targets.length : 0));
  }

  async more(n: number): Promise<void> {
    const target = this.outcomes.length + n;
    await until(
      async () => (this.outcomes.length >= target ? true : undefined),
      E2E_DEADLINE_MS,
      () => `${this.outcomes.length} of ${target} requests ended`,
    );
  }

  async stop(): Promise<HaOutcome[]> {
    this.#running = false;
    await Promise.all(this.#clients);
    return this.outcomes;
  }

  async #client(targets: readonly number[], first: number): Promise<void> {
    let at = first;
    while (this.#running) {
      const id = `ha-${++this.#seq}`;
      const body = JSON.stringify({ model: this.#ha.sim.model, prompt: `steady ${id} `.repeat(8), max_tokens: 4 });
      let tries = 0;
      for (;;) {
        const coordinator = targets[at % targets.length]!;
        const startedAt = Date.now();
        let status = 0;
        let error: string | null = null;
        try {
          const res = await fetch(`${this.#ha.proxyUrl(coordinator)}/v1/completions`, {
            method: 'POST',
            headers: { 'content-type': 'application/json', 'x-request-id': id },
            body,
          });
          status = res.status;
          const text = await res.text();
          if (status !== 200) error = text;
        } catch (err) {
          if (isRefused(err) && ++tries < targets.length) {
            at += 1;
            continue;
          }
          error = String(err);
        }
        this.outcomes.push({ coordinator, startedAt, endedAt: Date.now(), status, error });
        break;
      }
    }
  }
}

function isRefused(err: unknown): boolean {
  const code = (err as { code?: unknown }).code;
  return code === 'ConnectionRefused' || code === 'ECONNREFUSED' || /refused|Unable to connect/i.test(String(err));
}

/**
 * Waits until `probe` holds; resolves with the time it first did.
 * @example const at = await when(async () => (await ha.readiness(1)).status === 200, 'standby ready');
 */
export function when(probe: () => Promise<boolean>, what: string, deadlineMs = E2E_DEADLINE_MS): Promise<number> {
  return until(
    async () => ((await probe()) ? Date.now() : undefined),
    deadlineMs,
    () => `never: ${what}`,
    10,
  );
}
