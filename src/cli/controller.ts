/**
 * `pdlink controller`: runs the control loop over a topology file and serves its management
 * listener until SIGINT/SIGTERM. The file is watched: a change applies as a diff; a broken or
 * refused change is reported (log, GET /v1/cluster, the topology page) and the running topology kept.
 */
import { watch, type FSWatcher } from 'node:fs';
import { basename, dirname } from 'node:path';
import { createControllerApp } from '../apps/controller.ts';
import { settingsLine } from '../controller/planner/settings.ts';
import { loadTopology } from '../config/controller.ts';
import { parseCliIp, parseCliPort } from './values.ts';
import { ConfigError } from '../core/errors.ts';
import { openStore } from '../store/open.ts';
import { timingLine } from '../controller/spec.ts';
import { parseStringOptions, startListeners, untilSignal } from './common.ts';

/** Management listener defaults. */
const DEFAULT_MANAGE_IP = '127.0.0.1';
const DEFAULT_MANAGE_PORT = 1030;
/** Editors write a file in several steps; one reload after they settle. */
const RELOAD_SETTLE_MS = 100;

export const CONTROLLER_HELP = `Usage: pdlink controller --config PATH [options]

Runs the controller: gives each instance its role and peers (POST /v1/role/{role}), polls the
agents (GET /v1/status), and keeps every Coordinator's topology current (POST /v1/instances/refresh)
through faults, scale-out and drains. The topology file is watched; a change applies as a diff.

Options:
  --config PATH        topology file (pdlink's JSON; see docs/controller.md)
  --manage_ip IP       management listener address     (default ${DEFAULT_MANAGE_IP})
  --manage_port PORT   management listener port        (default ${DEFAULT_MANAGE_PORT}; 0 = any free port)
  -h, --help           show this help

Management listener: GET /v1/cluster, POST /v1/cluster/instances, DELETE /v1/cluster/instances/{id},
POST /v1/cluster/reload, probes, /metrics, /dashboard.

With pdlink.store.etcd.endpoints in the file (or env PDLINK_ETCD_ENDPOINTS), several controllers
share one etcd: the elected one leads, the others stand by (docs/high-availability.md).
`;

export interface ControllerArgs {
  help: boolean;
  config?: string;
  manageIp: string;
  managePort: number;
}

/**
 * Parses the controller's arguments.
 * @example parseControllerArgs(['--config', 'cluster.json', '--manage_port', '0'])
 */
export function parseControllerArgs(argv: string[]): ControllerArgs {
  const { values, help } = parseStringOptions(argv, ['config', 'manage_ip', 'manage_port'], CONTROLLER_HELP);
  const args: ControllerArgs = {
    help,
    manageIp: values.manage_ip === undefined ? DEFAULT_MANAGE_IP : parseCliIp('manage_ip', values.manage_ip),
    managePort: values.manage_port === undefined ? DEFAULT_MANAGE_PORT : parseCliPort('manage_port', values.manage_port),
  };
  if (values.config !== undefined) args.config = values.config;
  if (!help && args.config === undefined) throw new ConfigError(`--config: a topology file is required\n\n${CONTROLLER_HELP}`);
  return args;
}

/** Runs the controller command until a signal stops it. */
export async function runController(argv: string[]): Promise<void> {
  const args = parseControllerArgs(argv);
  if (args.help || args.config === undefined) {
    console.log(CONTROLLER_HELP);
    return;
  }
  const path = args.config;
  const loaded = loadTopology(path);
  const log = (line: string): void => console.log(`pdlink controller: ${line}`);
  log(timingLine(loaded.spec));
  const { tls, ...topology } = loaded;
  const store = loaded.store;
  const ha = store === undefined ? undefined : { store: await openStore(store), ttlSeconds: store.leaseTtlSeconds };
  const app = createControllerApp({
    ...topology,
    processMetrics: true,
    log,
    ha,
    ...(tls.client === undefined ? {} : { clientTls: tls.client }),
    topologyFile: { path, load: () => loadTopology(path).spec },
  });
  const listeners = await startListeners([
    {
      name: 'controller',
      hostname: args.manageIp,
      port: args.managePort,
      fetch: app.managementApp.fetch,
      ...(tls.server === undefined ? {} : { tls: tls.server }),
      maxConnections: loaded.maxConnections,
    },
  ]);
  app.controller.start();
  log(settingsLine(app.planner.settings));
  app.planner.start();
  // Several controllers on one etcd: the one elected leads, the others stand by.
  if (store !== undefined) {
    log(`sharing cluster ${store.cluster} on etcd ${store.endpoints.join(',')} (lease ${store.leaseTtlSeconds} s)`);
    app.campaign(listeners[0]!.url);
  }

  let timer: ReturnType<typeof setTimeout> | undefined;
  const reload = (): void => {
    timer = undefined;
    // The app logs what the change did or why it was refused; GET /v1/cluster shows it too.
    if (app.reloadFile().outcome === 'applied') log(`topology reloaded from ${path}`);
  };
  // The directory is watched, not the file: an editor's save replaces the file under a new inode.
  let watcher: FSWatcher | undefined;
  try {
    watcher = watch(dirname(path), (_event, name) => {
      if (name !== null && name !== basename(path)) return;
      if (timer !== undefined) clearTimeout(timer);
      timer = setTimeout(reload, RELOAD_SETTLE_MS);
    });
  } catch (err) {
    log(`cannot watch ${path}: ${err instanceof Error ? err.message : String(err)}; changes apply on restart only`);
  }

  await untilSignal(async () => {
    watcher?.close();
    if (timer !== undefined) clearTimeout(timer);
    await Promise.all(listeners.map((l) => l.stop()));
    await app.close();
  });
}
