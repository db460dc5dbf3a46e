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
import { engineConfig, refreshBody, roleBody, topologyEntry, type EngineLayout } from './cluster-bodies.ts';
import { spawnListening, until, type ManagedProcess } from './process.ts';
import type { SimEngineArgs } from './options.ts';

const REPO_ROOT = join(import.meta.dir, '..', '..');

/** The numeric engine options a cluster passes to every simulated engine (the CLI's own names). */
export type SimEngineSettings = Pick<
  SimEngineArgs,
  'numBlocks' | 'blockBytes' | 'blockTokens' | 'prefillMsPerToken' | 'decodeMsPerToken' | 'maxModelLen' | 'kvLeaseMs' | 'pullTimeoutMs'
>;

export interface SimClusterOptions {
  readonly prefill: number;
  readonly decode: number;
  /** Devices per engine (default 1). */
  readonly devices?: number;
  readonly model?: string;
  /** Simulator settings of every engine (defaults: small and fast, see CLUSTER_ENGINE_DEFAULTS). */
  readonly engine?: Partial<SimEngineSettings>;
  /**
   * Runs the whole cluster over mutual TLS: every listener requires a client certificate of the CA,
   * the Coordinator's legs and every call of the cluster's own go over https with the client
   * certificate. Called with the cluster's addresses, for a server certificate that names them.
   */
  readonly tls?: (ips: readonly string[]) => SimClusterTls;
  /** The Coordinator's configuration file (ms_coordinator.json layout). */
  readonly coordinatorConfig?: Record<string, unknown>;
  /** Each output line of every process, prefixed with its name. */
  readonly onLine?: (line: string) => void;
  /** Upper bound of every start-up wait. */
  readonly deadlineMs?: number;
  /** Wire the cluster (roles, refresh) after start (default true); false leaves it to a controller. */
  readonly wire?: boolean;
}

/** Engine settings of a launched cluster unless overridden: fast enough for tests on two cores. */
export const CLUSTER_ENGINE_DEFAULTS: SimEngineSettings = {
  numBlocks: 256,
  blockBytes: 4096,
  blockTokens: 16,
  prefillMsPerToken: 0,
  decodeMsPerToken: 1,
  maxModelLen: 4096,
  kvLeaseMs: 30_000,
  pullTimeoutMs: 5_000,
};

/** PEM file paths for a TLS cluster: one CA, one server certificate for every listener, one client certificate. */
export interface SimClusterTls {
  readonly caCert: string;
  readonly serverCert: string;
  readonly serverKey: string;
  readonly clientCert: string;
  readonly clientKey: string;
}

export interface SimEngineHandle extends EngineLayout {
  process: ManagedProcess;
  readonly manageUrl: string;
  readonly inferenceUrl: string;
}

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
  /** Bun's fetch `tls` for the cluster's own calls when it runs over TLS. */
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
    return fetch(url, this.#clientTls === undefined ? init : { ...init, tls: this.#clientTls });
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
      const coordinator = await spawnListening({
        name: 'coordinator',
        command: [
          process.execPath,
          join(REPO_ROOT, 'src', 'main.ts'),
          'coordinator',
          '--config',
          configPath,
          '--manage_ip',
          `${net}.1`,
          '--manage_port',
          '0',
          '--predict_ip',
          `${net}.1`,
          '--predict_port',
          '0',
        ],
        listeners: ['management', 'inference'],
        env: { BUN_CONFIG_MAX_HTTP_REQUESTS: '65535' },
        cwd: dir,
        ...spawnExtras(options),
      });
      started.push(coordinator);
      const settings = { ...CLUSTER_ENGINE_DEFAULTS, ...options.engine };
      // Engines start in parallel: each spends most of its start-up loading code and workers.
      const engines = await Promise.all(
        layouts.map(async (layout): Promise<SimEngineHandle> => {
          const path = join(dir, `${layout.name}.json`);
          writeFileSync(path, JSON.stringify(withEngineTls(engineConfig(layout, linkBasePort), tls)));
          const proc = await spawnListening({
            name: layout.name,
            command: [
              process.execPath,
              join(REPO_ROOT, 'src', 'cli', 'sim-engine.ts'),
              ...engineArgs(layout, path, options.model ?? 'pdlink-sim', settings),
            ],
            listeners: ['management', 'inference'],
            ...spawnExtras(options),
          });
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
   * Posts one engine's role with the given peers.
   * @example await cluster.postRole(d0, cluster.prefills);
   */
  async postRole(engine: SimEngineHandle, peers: readonly EngineLayout[]): Promise<void> {
    const res = await this.fetch(`${engine.manageUrl}/v1/role/${engine.role}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(roleBody(engine, peers)),
    });
    if (res.status !== 200) throw new Error(`role post to ${engine.name} answered ${res.status}: ${await res.text()}`);
  }

  /** `service.roleStatus` of an engine's agent. */
  async roleStatus(engine: SimEngineHandle): Promise<string> {
    const res = await this.fetch(`${engine.manageUrl}/v1/status`);
    return ((await res.json()) as { service: { roleStatus: string } }).service.roleStatus;
  }

  /**
   * Pushes the refresh snapshot of the running engines (minus `exclude`) to the Coordinator.
   * @example await cluster.refresh({ exclude: ['d0', 'd1'] });
   */
  async refresh(options: { exclude?: readonly string[] } = {}): Promise<void> {
    const entries = this.engines
      .filter((e) => e.process.running() && !(options.exclude ?? []).includes(e.name))
      .map((e) => ({ engine: e, inferencePort: Number(new URL(e.inferenceUrl).port), managementPort: Number(new URL(e.manageUrl).port) }));
    const body = refreshBody(entries, this.model, this.settings);
    const res = await this.fetch(`${this.coordinatorUrl}/v1/instances/refresh`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
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
    const args = this.coordinator.child.spawnargs.slice(1);
    await this.coordinator.stop('SIGKILL');
    this.coordinator = await spawnListening({
      name: 'coordinator',
      command: [
        process.execPath,
        ...args.map((arg, i, all) =>
          all[i - 1] === '--manage_port' ? manage.port : all[i - 1] === '--predict_port' ? inference.port : arg,
        ),
      ],
      listeners: ['management', 'inference'],
      env: { BUN_CONFIG_MAX_HTTP_REQUESTS: '65535' },
      cwd: this.#dir,
      ...spawnExtras(this.#options),
    });
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
    const path = join(this.#dir, `${layout.name}.json`);
    writeFileSync(path, JSON.stringify(withEngineTls(engineConfig(layout, this.#linkBasePort), this.#tls)));
    const proc = await spawnListening({
      name: layout.name,
      command: [process.execPath, join(REPO_ROOT, 'src', 'cli', 'sim-engine.ts'), ...engineArgs(layout, path, this.model, this.settings)],
      listeners: ['management', 'inference'],
      ...spawnExtras(this.#options),
    });
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
    const path = join(this.#dir, `${engine.name}.json`);
    writeFileSync(path, JSON.stringify(withEngineTls(engineConfig(engine, this.#linkBasePort), this.#tls)));
    const manage = new URL(engine.manageUrl);
    const inference = new URL(engine.inferenceUrl);
    engine.process = await spawnListening({
      name: engine.name,
      command: [
        process.execPath,
        join(REPO_ROOT, 'src', 'cli', 'sim-engine.ts'),
        ...engineArgs(engine, path, this.model, this.settings).map((arg, i, all) =>
          all[i - 1] === '--manage_port' ? manage.port : all[i - 1] === '--port' ? inference.port : arg,
        ),
      ],
      listeners: ['management', 'inference'],
      ...spawnExtras(this.#options),
    });
    if (options.wire !== false) await this.wire();
  }

  /**
   * Arms faults on an engine (body of `POST /sim/faults`).
   * @example await cluster.faults('p0', { prefill_status: { status: 500 } });
   */
  async faults(name: string, body: Record<string, unknown>): Promise<void> {
    const res = await this.fetch(`${this.engine(name).manageUrl}/sim/faults`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    if (res.status !== 200) throw new Error(`faults on ${name} answered ${res.status}: ${await res.text()}`);
  }

  /** `GET /sim/status` of an engine. */
  async simStatus(name: string): Promise<{ requests: Record<string, number>; kv: Record<string, number> }> {
    return (await (await this.fetch(`${this.engine(name).manageUrl}/sim/status`)).json()) as {
      requests: Record<string, number>;
      kv: Record<string, number>;
    };
  }

  /** `GET /sim/requests` of an engine, optionally for one request id. */
  async requests(name: string, requestId?: string): Promise<Record<string, unknown>[]> {
    const query = requestId === undefined ? '' : `?request_id=${encodeURIComponent(requestId)}`;
    return (
      (await (await this.fetch(`${this.engine(name).manageUrl}/sim/requests${query}`)).json()) as { requests: Record<string, unknown>[] }
    ).requests;
  }

  /**
   * The topology file entry of an engine, for a controller.
   * @example cluster.topologyEntry(cluster.engine('d0'))
   */
  topologyEntry(engine: SimEngineHandle): Record<string, unknown> {
    return topologyEntry(engine, engine.manageUrl, engine.inferenceUrl, this.model, this.settings);
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

function engineArgs(layout: EngineLayout, configPath: string, model: string, s: SimEngineSettings): string[] {
  return [
    '--role',
    layout.role,
    '--model',
    model,
    '--config',
    configPath,
    '--manage_ip',
    layout.ip,
    '--manage_port',
    '0',
    '--ip',
    layout.ip,
    '--port',
    '0',
    '--num_blocks',
    String(s.numBlocks),
    '--block_bytes',
    String(s.blockBytes),
    '--block_tokens',
    String(s.blockTokens),
    '--prefill_ms_per_token',
    String(s.prefillMsPerToken),
    '--decode_ms_per_token',
    String(s.decodeMsPerToken),
    '--max_model_len',
    String(s.maxModelLen),
    '--kv_lease_ms',
    String(s.kvLeaseMs),
    '--pull_timeout_ms',
    String(s.pullTimeoutMs),
  ];
}

/** The Coordinator's file with MindIE's tls_config switched on for both listeners and the engine legs. */
function coordinatorConfigOf(config: Record<string, unknown>, tls: SimClusterTls | undefined): Record<string, unknown> {
  if (tls === undefined) return config;
  const server = { ca_cert: tls.caCert, tls_cert: tls.serverCert, tls_key: tls.serverKey };
  const client = { ca_cert: tls.caCert, tls_cert: tls.clientCert, tls_key: tls.clientKey };
  return {
    ...config,
    tls_config: {
      controller_server_tls_enable: true,
      controller_server_tls_items: server,
      request_server_tls_enable: true,
      request_server_tls_items: server,
      mindie_client_tls_enable: true,
      mindie_client_tls_items: client,
    },
  };
}

/** An engine's file with `pdlink.tls` on for both listeners and its calls to other engines. */
function withEngineTls(config: Record<string, unknown>, tls: SimClusterTls | undefined): Record<string, unknown> {
  if (tls === undefined) return config;
  const server = { ca_cert: tls.caCert, tls_cert: tls.serverCert, tls_key: tls.serverKey };
  const client = { ca_cert: tls.caCert, tls_cert: tls.clientCert, tls_key: tls.clientKey };
  const pdlink = (config['pdlink'] ?? {}) as Record<string, unknown>;
  return {
    ...config,
    pdlink: {
      ...pdlink,
      tls: {
        management_tls_enable: true,
        management_tls_items: server,
        inference_tls_enable: true,
        inference_tls_items: server,
        client_tls_enable: true,
        client_tls_items: client,
      },
    },
  };
}

function spawnExtras(options: SimClusterOptions): { onLine?: (line: string) => void; deadlineMs?: number } {
  return {
    ...(options.onLine === undefined ? {} : { onLine: options.onLine }),
    ...(options.deadlineMs === undefined ? {} : { deadlineMs: options.deadlineMs }),
  };
}
