/**
 * A simulated PD cluster on loopback, launched as real processes: one `pdlink coordinator` and
 * `pdlink sim-engine` processes (each one engine with its instance agent) on distinct loopback
 * addresses, then wired the way a Controller would: roles posted to each engine's management
 * listener, RoleReady awaited, the refresh snapshot pushed to the Coordinator. The demo, the
 * end-to-end tests and the proxy benchmark all use it.
 *
 * Addresses: a cluster picks a random 127.A.B.0/24 (A in 100–199), the Coordinator on .1 and
 * engine i on .(2 + i); all listeners on port 0; device d of an engine listens on
 * engine_ip:(base + d) with one random link base port for the whole cluster (the role API derives
 * peer link ports from it). A start that fails on a taken address retries with new ones.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { refreshBody, roleBody, topologyEntry, type EngineLayout } from './cluster-bodies.ts';
import {
  CLUSTER_ENGINE_DEFAULTS,
  kvEventsOf,
  type SimClusterOptions,
  type SimClusterTls,
  type SimEngineHandle,
  type SimEngineSettings,
} from './cluster-options.ts';
import { coordinatorArgs, platformCommand, startCoordinator, startEngine, tokenFileOf, type EnginePlace } from './cluster-spawn.ts';
import { coordinatorConfigOf } from './cluster-tls.ts';
import { until, type ManagedProcess } from './process.ts';
import { platform } from '../../platform/index.ts';

export { CLUSTER_ENGINE_DEFAULTS } from './cluster-options.ts';
export type { SimClusterOptions, SimClusterTls, SimEngineHandle, SimEngineSettings } from './cluster-options.ts';

export class SimCluster {
  readonly model: string;
  readonly settings: SimEngineSettings;
  coordinator: ManagedProcess;
  readonly engines: SimEngineHandle[];
  readonly #dir: string;
  readonly #net: string;
  readonly #linkBasePort: number;
  readonly #options: SimClusterOptions;
  readonly #tls: SimClusterTls | undefined;
  /** The client TLS of the cluster's own calls when it runs over TLS. */
  readonly #clientTls: { ca: string; cert: string; key: string } | undefined;

  /** The PEM files when the cluster runs over TLS (a controller over it uses them too). */
  get tlsFiles(): SimClusterTls | undefined {
    return this.#tls;
  }

  /**
   * fetch, over https with the cluster's client certificate when it runs over TLS.
   * @example const res = await cluster.fetch(`${cluster.proxyUrl}/v1/models`);
   */
  fetch(url: string, init: RequestInit = {}): Promise<Response> {
    return fetch(url, this.#clientTls === undefined ? init : { ...init, ...platform.tlsInit(this.#clientTls) });
  }

  private constructor(
    options: SimClusterOptions,
    dir: string,
    net: string,
    linkBasePort: number,
    coordinator: ManagedProcess,
    engines: SimEngineHandle[],
    tls: SimClusterTls | undefined,
  ) {
    this.#tls = tls;
    this.#clientTls =
      tls === undefined
        ? undefined
        : { ca: readFileSync(tls.caCert, 'utf8'), cert: readFileSync(tls.clientCert, 'utf8'), key: readFileSync(tls.clientKey, 'utf8') };
    this.#net = net;
    this.#options = options;
    this.model = options.model ?? 'pdlink-sim';
    this.settings = { ...CLUSTER_ENGINE_DEFAULTS, ...options.engine };
    this.#dir = dir;
    this.#linkBasePort = linkBasePort;
    this.coordinator = coordinator;
    this.engines = engines;
  }

  /**
   * Starts the processes, posts the roles, waits for RoleReady everywhere and refreshes the Coordinator.
   * @example const cluster = await SimCluster.start({ prefill: 2, decode: 2, devices: 2 });
   */
  static async start(options: SimClusterOptions): Promise<SimCluster> {
    let lastError: unknown;
    for (let attempt = 0; attempt < 3; attempt++) {
      const cluster = await SimCluster.#launch(options).catch((err: unknown) => {
        lastError = err;
        return undefined;
      });
      if (cluster === undefined) {
        // Only a taken address is worth another draw; anything else would fail again.
        if (!/in use|EADDRINUSE|cannot listen|cannot open link endpoint/i.test(String(lastError))) break;
        continue;
      }
      try {
        if (options.wire !== false) await cluster.wire();
        return cluster;
      } catch (err) {
        await cluster.stop();
        throw err;
      }
    }
    throw lastError;
  }

  static async #launch(options: SimClusterOptions): Promise<SimCluster> {
    const net = `127.${100 + Math.floor(Math.random() * 100)}.${Math.floor(Math.random() * 256)}`;
    const linkBasePort = 20_000 + Math.floor(Math.random() * 40_000);
    const dir = mkdtempSync(join(tmpdir(), 'pdlink-sim-'));
    const layouts: EngineLayout[] = [];
    for (let i = 0; i < options.prefill; i++)
      layouts.push({ name: `p${i}`, role: 'prefill', id: 100 + i, ip: `${net}.${2 + layouts.length}`, devices: options.devices ?? 1 });
    for (let i = 0; i < options.decode; i++)
      layouts.push({ name: `d${i}`, role: 'decode', id: 200 + i, ip: `${net}.${2 + layouts.length}`, devices: options.devices ?? 1 });
    const started: ManagedProcess[] = [];
    try {
      const tls = options.tls?.([`${net}.1`, ...layouts.map((l) => l.ip)]);
      const configPath = join(dir, 'ms_coordinator.json');
      writeFileSync(configPath, JSON.stringify(coordinatorConfigOf(options.coordinatorConfig ?? {}, tls)));
      const coordinator = await startCoordinator(coordinatorArgs(configPath, `${net}.1`), dir, options);
      started.push(coordinator);
      const settings = { ...CLUSTER_ENGINE_DEFAULTS, ...options.engine };
      // Engines start in parallel: each spends most of its start-up loading code and workers.
      const engines = await Promise.all(
        layouts.map(async (layout): Promise<SimEngineHandle> => {
          const proc = await startEngine({ dir, linkBasePort, tls }, layout, options.model ?? 'pdlink-sim', settings, options);
          started.push(proc);
          return { ...layout, process: proc, manageUrl: proc.urls['management']!, inferenceUrl: proc.urls['inference']! };
        }),
      );
      return new SimCluster(options, dir, net, linkBasePort, coordinator, engines, tls);
    } catch (err) {
      await Promise.all(started.map((p) => p.stop('SIGKILL')));
      rmSync(dir, { recursive: true, force: true });
      throw err;
    }
  }

  get prefills(): SimEngineHandle[] {
    return this.engines.filter((e) => e.role === 'prefill');
  }

  get decodes(): SimEngineHandle[] {
    return this.engines.filter((e) => e.role === 'decode');
  }

  /** `http://…` of the Coordinator's inference (proxy) listener. */
  get proxyUrl(): string {
    return this.coordinator.urls['inference']!;
  }

  /** `http://…` of the Coordinator's management listener. */
  get coordinatorUrl(): string {
    return this.coordinator.urls['management']!;
  }

  /**
   * The engine of that name.
   * @example cluster.engine('d0').inferenceUrl
   */
  engine(name: string): SimEngineHandle {
    const engine = this.engines.find((e) => e.name === name);
    if (engine === undefined) throw new Error(`no engine ${name} in this cluster`);
    return engine;
  }

  /**
   * Posts every running engine's role (peers: the running engines of the other role), waits
   * until each reports RoleReady, then pushes the refresh of the running engines.
   * @example await cluster.wire();
   */
  async wire(): Promise<void> {
    const live = this.engines.filter((e) => e.process.running());
    await Promise.all(
      live.map((e) =>
        this.postRole(
          e,
          live.filter((o) => o.role !== e.role),
        ),
      ),
    );
    const deadline = this.#options.deadlineMs ?? 30_000;
    await Promise.all(
      live.map((e) =>
        until(
          async () => ((await this.roleStatus(e)) === 'RoleReady' ? true : undefined),
          deadline,
          () => `${e.name} is not RoleReady`,
        ),
      ),
    );
    await this.refresh();
  }

  /**
   * The management token header for calls to the cluster's processes (empty when there is none).
   * @example await fetch(`${cluster.coordinatorUrl}/v1/instances`, { headers: cluster.authorization() });
   */
  authorization(): Record<string, string> {
    const path = tokenFileOf(this.#options);
    return path === undefined ? {} : { authorization: `Bearer ${readFileSync(path, 'utf8').trim()}` };
  }

  /**
   * Posts one engine's role with the given peers.
   * @example await cluster.postRole(d0, cluster.prefills);
   */
  async postRole(engine: SimEngineHandle, peers: readonly EngineLayout[]): Promise<void> {
    const res = await this.fetch(`${engine.manageUrl}/v1/role/${engine.role}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...this.authorization() },
      body: JSON.stringify(roleBody(engine, peers)),
    });
    if (res.status !== 200) throw new Error(`role post to ${engine.name} answered ${res.status}: ${await res.text()}`);
  }

  /** `service.roleStatus` of an engine's agent. */
  async roleStatus(engine: SimEngineHandle): Promise<string> {
    const res = await this.fetch(`${engine.manageUrl}/v1/status`, { headers: this.authorization() });
    return ((await res.json()) as { service: { roleStatus: string } }).service.roleStatus;
  }

  /**
   * Pushes the refresh snapshot of the running engines (minus `exclude`) to the Coordinator.
   * @example await cluster.refresh({ exclude: ['d0', 'd1'] });
   */
  async refresh(options: { exclude?: readonly string[] } = {}): Promise<void> {
    const entries = this.engines
      .filter((e) => e.process.running() && !(options.exclude ?? []).includes(e.name))
      .map((e) => ({
        engine: e,
        inferencePort: Number(new URL(e.inferenceUrl).port),
        managementPort: Number(new URL(e.manageUrl).port),
        kvEvents: kvEventsOf(e.process),
      }));
    const body = refreshBody(entries, this.model, this.settings);
    const res = await this.fetch(`${this.coordinatorUrl}/v1/instances/refresh`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...this.authorization() },
      body: JSON.stringify(body),
    });
    if (res.status !== 200) throw new Error(`refresh answered ${res.status}: ${await res.text()}`);
  }

  /**
   * Kills the Coordinator and starts it again on the same addresses, with nothing registered.
   * @example await cluster.restartCoordinator();
   */
  async restartCoordinator(): Promise<void> {
    const manage = new URL(this.coordinatorUrl);
    const inference = new URL(this.proxyUrl);
    const args = this.coordinator.child.spawnargs.slice(platformCommand(this.#options.platforms?.coordinator).length);
    await this.coordinator.stop('SIGKILL');
    this.coordinator = await startCoordinator(
      args.map((arg, i, all) => (all[i - 1] === '--manage_port' ? manage.port : all[i - 1] === '--predict_port' ? inference.port : arg)),
      this.#dir,
      this.#options,
    );
  }

  /**
   * Starts one more engine on the next address, not wired (scale-out is the wiring's business).
   * @example const d2 = await cluster.spawnEngine('decode');
   */
  async spawnEngine(role: 'prefill' | 'decode'): Promise<SimEngineHandle> {
    const index = this.engines.filter((e) => e.role === role).length;
    const layout: EngineLayout = {
      name: `${role === 'prefill' ? 'p' : 'd'}${index}`,
      role,
      id: (role === 'prefill' ? 100 : 200) + index,
      ip: `${this.#net}.${2 + this.engines.length}`,
      devices: this.#options.devices ?? 1,
    };
    const proc = await startEngine(this.#place(), layout, this.model, this.settings, this.#options);
    const handle = { ...layout, process: proc, manageUrl: proc.urls['management']!, inferenceUrl: proc.urls['inference']! };
    this.engines.push(handle);
    return handle;
  }

  /**
   * Starts a stopped (or killed) engine again at the same addresses and, unless told not to
   * (a controller does it), wires the cluster anew.
   * @example await cluster.restart('d0');
   */
  async restart(name: string, options: { wire?: boolean } = {}): Promise<void> {
    const engine = this.engine(name);
    await engine.process.stop('SIGKILL');
    const ports = { manage: new URL(engine.manageUrl).port, inference: new URL(engine.inferenceUrl).port };
    engine.process = await startEngine(this.#place(), engine, this.model, this.settings, this.#options, ports);
    if (options.wire !== false) await this.wire();
  }

  /**
   * Arms faults on an engine (body of `POST /sim/faults`).
   * @example await cluster.faults('p0', { prefill_status: { status: 500 } });
   */
  async faults(name: string, body: Record<string, unknown>): Promise<void> {
    const res = await this.fetch(`${this.engine(name).manageUrl}/sim/faults`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...this.authorization() },
      body: JSON.stringify(body),
    });
    if (res.status !== 200) throw new Error(`faults on ${name} answered ${res.status}: ${await res.text()}`);
  }

  /** `GET /sim/status` of an engine. */
  async simStatus(name: string): Promise<{ requests: Record<string, number>; kv: Record<string, number> }> {
    return (await (await this.fetch(`${this.engine(name).manageUrl}/sim/status`, { headers: this.authorization() })).json()) as {
      requests: Record<string, number>;
      kv: Record<string, number>;
    };
  }

  /** `GET /sim/requests` of an engine, optionally for one request id. */
  async requests(name: string, requestId?: string): Promise<Record<string, unknown>[]> {
    const query = requestId === undefined ? '' : `?request_id=${encodeURIComponent(requestId)}`;
    return (
      (await (await this.fetch(`${this.engine(name).manageUrl}/sim/requests${query}`, { headers: this.authorization() })).json()) as {
        requests: Record<string, unknown>[];
      }
    ).requests;
  }

  /**
   * The topology file entry of an engine, for a controller.
   * @example cluster.topologyEntry(cluster.engine('d0'))
   */
  topologyEntry(engine: SimEngineHandle): Record<string, unknown> {
    return topologyEntry(engine, engine.manageUrl, engine.inferenceUrl, this.model, this.settings);
  }

  /** Where this cluster's engines get their config files and link ports. */
  #place(): EnginePlace {
    return { dir: this.#dir, linkBasePort: this.#linkBasePort, tls: this.#tls };
  }

  /** Directory of the cluster's files (removed on stop). */
  get dir(): string {
    return this.#dir;
  }

  /**
   * Stops every process (SIGTERM, SIGKILL after a grace period) and removes the config files.
   * @example await cluster.stop();
   */
  async stop(): Promise<void> {
    await Promise.all([...this.engines.map((e) => e.process.stop()), this.coordinator.stop()]);
    rmSync(this.#dir, { recursive: true, force: true });
  }
}
