/**
 * `pdlink sim-cluster`: a new user's first cluster. Starts one prefill and one decode engine
 * simulator on fixed loopback addresses (127.0.0.11 and 127.0.0.12, MindIE's ports 1025/1026,
 * link port 26000), posts each its role the way a Controller does and waits until both report
 * RoleReady, then prints the refresh body that registers them with a Coordinator. With
 * `npm start` in another terminal, that refresh and one curl give a first completion through the
 * PD proxy. With `--wire controller` it leaves the roles to `pdlink controller` and prints the
 * topology file that wires them (examples/controller/cluster.json for the default addresses).
 * Runs until SIGINT/SIGTERM, then stops both engines with the same signal.
 */
import { readManagementToken } from '../config/secret-file.ts';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CLUSTER_ENGINE_DEFAULTS } from '../sim/cluster/cluster.ts';
import { engineConfig, refreshBody, roleBody, topologyEntry, type EngineLayout } from '../sim/cluster/cluster-bodies.ts';
import { spawnListening, until, type ManagedProcess } from '../sim/cluster/process.ts';
import { isAllInterfaces } from '../net/all-interfaces.ts';
import { parseCliIp } from './values.ts';
import { ConfigError } from '../core/errors.ts';
import { listeningLine, parseStringOptions } from './common.ts';
import { loadConfigFile } from '../config/load.ts';
import { clientTlsOf } from '../config/tls.ts';
import { InstanceTlsSection } from '../schema/instance-config.ts';
import { shutdownSignals } from './shutdown.ts';
import { platform } from '../platform/index.ts';
import { launchEnv } from '../platform/launch-env.ts';
import { pdlinkModule } from '../platform/module-path.ts';

export const SIM_CLUSTER_DEFAULTS = {
  prefillIp: '127.0.0.11',
  decodeIp: '127.0.0.12',
  model: 'pdlink-sim',
  /** Where `npm start` listens: the Coordinator a printed topology file keeps informed. */
  coordinator: 'http://127.0.0.1:1026',
} as const;
/** Who posts the engines' roles. */
const WIRE = ['sim-cluster', 'controller'] as const;
/** MindIE's engine ports and pdlink's first link port, the same on each engine's own address. */
const INFERENCE_PORT = 1025;
const MANAGEMENT_PORT = 1026;
const LINK_BASE_PORT = 26000;
const READY_DEADLINE_MS = 30_000;

export const SIM_CLUSTER_HELP = `Usage: pdlink sim-cluster [options]

Starts two engine simulators (not inference engines) on loopback: prefill instance 0 and decode
instance 1, each with its pdlink instance agent, links them (role posts, RoleReady), and prints
the body of the refresh that registers them with a Coordinator. Runs until SIGINT/SIGTERM.

  prefill: inference http://127.0.0.11:1025, management http://127.0.0.11:1026, link 127.0.0.11:26000
  decode:  inference http://127.0.0.12:1025, management http://127.0.0.12:1026, link 127.0.0.12:26000

Options:
  --prefill_ip IP   address of the prefill engine (default ${SIM_CLUSTER_DEFAULTS.prefillIp})
  --decode_ip IP    address of the decode engine  (default ${SIM_CLUSTER_DEFAULTS.decodeIp})
  --model NAME      model name the engines serve  (default ${SIM_CLUSTER_DEFAULTS.model})
  --wire WHO        who posts the engines' roles: sim-cluster (default; prints a refresh body for
                    a Coordinator) or controller (posts nothing; prints the topology file with
                    which pdlink controller wires them and keeps ${SIM_CLUSTER_DEFAULTS.coordinator} informed)
  --tls_config PATH JSON file of an instance config's pdlink.tls section (management_tls_*,
                    inference_tls_*, client_tls_*): both engines serve with it, and the role
                    posts and status polls use its client_tls_* (docs/security.md,
                    "Mutual TLS between every process")
  -h, --help        show this help
`;

/**
 * Runs the two-engine cluster until a signal stops it.
 * @example await runSimCluster(['--prefill_ip', '127.0.0.21', '--decode_ip', '127.0.0.22']);
 */
export async function runSimCluster(argv: string[]): Promise<void> {
  const shutdown = shutdownSignals();
  const { values, help } = parseStringOptions(argv, ['prefill_ip', 'decode_ip', 'model', 'tls_config', 'wire'], SIM_CLUSTER_HELP);
  if (help) {
    console.log(SIM_CLUSTER_HELP);
    return;
  }
  const model = values.model ?? SIM_CLUSTER_DEFAULTS.model;
  if (model.trim() === '') throw new ConfigError('--model: must not be empty');
  const wire = values.wire ?? 'sim-cluster';
  if (!(WIRE as readonly string[]).includes(wire))
    throw new ConfigError(`--wire: must be ${WIRE.join(' or ')}, got ${JSON.stringify(wire)}`);
  const layouts: EngineLayout[] = [
    { name: 'prefill', role: 'prefill', id: 0, ip: ip('prefill_ip', values.prefill_ip ?? SIM_CLUSTER_DEFAULTS.prefillIp), devices: 1 },
    { name: 'decode', role: 'decode', id: 1, ip: ip('decode_ip', values.decode_ip ?? SIM_CLUSTER_DEFAULTS.decodeIp), devices: 1 },
  ];
  if (layouts[0]!.ip === layouts[1]!.ip)
    throw new ConfigError('--decode_ip: must differ from --prefill_ip (both engines use the same ports)');

  const tls = values.tls_config === undefined ? undefined : loadConfigFile(values.tls_config, InstanceTlsSection);
  const clientTls = clientTlsOf(
    '--tls_config client_tls_enable',
    '--tls_config client_tls_items',
    tls?.client_tls_enable,
    tls?.client_tls_items,
  );
  const call = (url: string, init: RequestInit = {}): Promise<Response> =>
    fetch(url, clientTls === undefined ? init : { ...init, ...platform.tlsInit(clientTls) });

  const dir = mkdtempSync(join(tmpdir(), 'pdlink-sim-cluster-'));
  const engines: ManagedProcess[] = [];
  // A terminal's Ctrl-C reaches the engines too (one process group); stopped with that same
  // signal, they take it for the one they already have (cli/shutdown.ts) and close in order.
  const stop = async (): Promise<void> => {
    await Promise.all(engines.map((e) => e.stop(shutdown.signal ?? 'SIGTERM')));
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    for (const layout of layouts) engines.push(await startEngine(layout, dir, model, tls));
    if (wire === 'controller') {
      printListening(layouts, engines);
      console.log('pdlink: sim-cluster up, roles left to a controller; pdlink controller --config FILE wires them with this FILE:');
      console.log(JSON.stringify(controllerTopology(layouts, model), null, 2));
      await shutdown.received();
      await stop();
      return;
    }
    await Promise.all(
      layouts.map((layout, i) =>
        postRole(
          call,
          engines[i]!,
          layout,
          layouts.filter((o) => o !== layout),
        ),
      ),
    );
    await Promise.all(engines.map((e) => untilReady(call, e, shutdown.received())));
  } catch (err) {
    await stop();
    if (err instanceof ConfigError) throw err;
    throw new ConfigError(err instanceof Error ? err.message : String(err));
  }
  const body = refreshBody(
    layouts.map((engine) => ({ engine, inferencePort: INFERENCE_PORT, managementPort: MANAGEMENT_PORT })),
    model,
    CLUSTER_ENGINE_DEFAULTS,
  );
  printListening(layouts, engines);
  console.log('pdlink: sim-cluster linked (both engines RoleReady); register them with this refresh body:');
  console.log(JSON.stringify(body));
  await shutdown.received();
  await stop();
}

function printListening(layouts: readonly EngineLayout[], engines: readonly ManagedProcess[]): void {
  for (const [i, layout] of layouts.entries()) {
    console.log(listeningLine(`${layout.name}-inference`, engines[i]!.urls['inference']!));
    console.log(listeningLine(`${layout.name}-management`, engines[i]!.urls['management']!));
  }
}

/** The controller's topology file of the two engines (pdlink's own, so pdlink's fast timings). */
function controllerTopology(layouts: readonly EngineLayout[], model: string): Record<string, unknown> {
  const url = (ip: string, port: number) => `http://${ip.includes(':') ? `[${ip}]` : ip}:${port}`;
  return {
    coordinators: [SIM_CLUSTER_DEFAULTS.coordinator],
    instances: layouts.map((l) => topologyEntry(l, url(l.ip, MANAGEMENT_PORT), url(l.ip, INFERENCE_PORT), model, CLUSTER_ENGINE_DEFAULTS)),
  };
}

function ip(option: string, value: string): string {
  const parsed = parseCliIp(option, value);
  // A simulator is for one machine: it never listens on every interface.
  if (isAllInterfaces(parsed)) throw new ConfigError(`--${option}: ${parsed} listens on every interface; give a loopback address`);
  return parsed;
}

async function startEngine(layout: EngineLayout, dir: string, model: string, tls: InstanceTlsSection | undefined): Promise<ManagedProcess> {
  const config = join(dir, `${layout.name}.json`);
  const file = engineConfig(layout, LINK_BASE_PORT) as { pdlink?: Record<string, unknown> };
  writeFileSync(config, JSON.stringify(tls === undefined ? file : { ...file, pdlink: { ...file.pdlink, tls } }));
  const s = CLUSTER_ENGINE_DEFAULTS;
  return spawnListening({
    name: layout.name,
    command: [
      process.execPath,
      pdlinkModule('cli/sim-engine'),
      ...['--role', layout.role, '--model', model, '--config', config],
      ...['--manage_ip', layout.ip, '--manage_port', String(MANAGEMENT_PORT), '--ip', layout.ip, '--port', String(INFERENCE_PORT)],
      ...['--num_blocks', String(s.numBlocks), '--block_bytes', String(s.blockBytes), '--block_tokens', String(s.blockTokens)],
      ...['--decode_ms_per_token', String(s.decodeMsPerToken), '--max_model_len', String(s.maxModelLen)],
    ],
    listeners: ['management', 'inference'],
    env: launchEnv(),
    onLine: (line) => {
      // The engines' own failures (a taken port, above all) are what the user needs to see.
      if (!/listening on|cluster_id|sim-engine \(simulator\)/.test(line)) console.error(`pdlink sim-cluster: ${line}`);
    },
  }).catch((err: unknown) => {
    throw new ConfigError(`the ${layout.role} engine did not start: ${err instanceof Error ? err.message.trim() : String(err)}`);
  });
}

type Call = (url: string, init?: RequestInit) => Promise<Response>;

async function postRole(call: Call, engine: ManagedProcess, layout: EngineLayout, peers: EngineLayout[]): Promise<void> {
  const res = await call(`${engine.urls['management']}/v1/role/${layout.role}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...managementAuthorization() },
    body: JSON.stringify(roleBody(layout, peers)),
  });
  if (res.status !== 200) throw new ConfigError(`role post to the ${layout.role} engine answered ${res.status}: ${await res.text()}`);
}

/** The engines inherit PDLINK_MANAGEMENT_TOKEN_FILE; the calls made here carry that token. */
function managementAuthorization(): Record<string, string> {
  const token = readManagementToken(undefined, process.env);
  return token === undefined ? {} : { authorization: `Bearer ${token}` };
}

async function untilReady(call: Call, engine: ManagedProcess, stopped: Promise<void>): Promise<void> {
  let last = 'no answer yet';
  let signalled = false;
  void stopped.then(() => (signalled = true));
  await until(
    async () => {
      if (signalled) return true;
      const status = (await (await call(`${engine.urls['management']}/v1/status`, { headers: managementAuthorization() })).json()) as {
        service: { roleStatus: string };
      };
      last = status.service.roleStatus;
      return last === 'RoleReady' ? true : undefined;
    },
    READY_DEADLINE_MS,
    () => `the ${engine.name} engine is not RoleReady (${last})`,
  );
}
