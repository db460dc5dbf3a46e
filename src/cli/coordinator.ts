/**
 * `pdlink coordinator`: serves the management and inference listeners until SIGINT/SIGTERM.
 */
import { kvOptionsOf } from '../config/kv-events.ts';
import { createCoordinator } from '../apps/coordinator.ts';
import type { CoordinatorHa } from '../apps/coordinator-ha.ts';
import { resolveCoordinatorSettings, type CoordinatorArgs, CONFIG_PATH_ENV, DEFAULT_CONFIG_FILE } from '../config/coordinator.ts';
import { parseCliIp, parseCliPort } from './values.ts';
import { InstanceAddressPolicy } from '../net/address-policy.ts';
import { openAiErrorBody } from '../proxy/exchange/errors.ts';
import { parseStringOptions, startListeners, untilSignal } from './common.ts';
import { shutdownSignals } from './shutdown.ts';

export const COORDINATOR_HELP = `Usage: pdlink coordinator [options]

Serves the Coordinator: the management API (POST /v1/instances/refresh, GET /v1/instances, probes,
/metrics) and the inference API.

Options:
  --config PATH        configuration file (MindIE ms_coordinator.json layout); default: env
                       ${CONFIG_PATH_ENV}, else ./${DEFAULT_CONFIG_FILE} if present,
                       else the embedded defaults
  --manage_ip IP       management listener address     (default 127.0.0.1)
  --manage_port PORT   management listener port        (default 1026; 0 = any free port)
  --predict_ip IP      inference listener address      (default 127.0.0.1)
  --predict_port PORT  inference listener port         (default 1025; 0 = any free port)
  -h, --help           show this help

A command-line value wins over the configuration file, which wins over the defaults.
With pdlink.store.etcd.endpoints in the file (or env PDLINK_ETCD_ENDPOINTS), several Coordinators
share one etcd: active/active, or master/standby with backup_config.function_enable.
`;

/**
 * Parses the coordinator's arguments.
 * @example parseCoordinatorArgs(['--manage_port', '0'])
 */
export function parseCoordinatorArgs(argv: string[]): CoordinatorArgs & { help: boolean } {
  const { values, help } = parseStringOptions(argv, ['config', 'manage_ip', 'manage_port', 'predict_ip', 'predict_port'], COORDINATOR_HELP);
  const args: CoordinatorArgs & { help: boolean } = { help };
  if (values.config !== undefined) args.config = values.config;
  if (values.manage_ip !== undefined) args.manageIp = parseCliIp('manage_ip', values.manage_ip);
  if (values.manage_port !== undefined) args.managePort = parseCliPort('manage_port', values.manage_port);
  if (values.predict_ip !== undefined) args.predictIp = parseCliIp('predict_ip', values.predict_ip);
  if (values.predict_port !== undefined) args.predictPort = parseCliPort('predict_port', values.predict_port);
  return args;
}

/** Runs the coordinator command until a signal stops it. */
export async function runCoordinator(argv: string[]): Promise<void> {
  shutdownSignals();
  const args = parseCoordinatorArgs(argv);
  if (args.help) {
    console.log(COORDINATOR_HELP);
    return;
  }
  const settings = resolveCoordinatorSettings(args, process.env, process.cwd());
  const haSettings = settings.ha;
  let ha: CoordinatorHa | undefined;
  const { security } = settings;
  // Its own listeners are refused as instances (a refresh must not make the proxy call itself).
  const addressPolicy = new InstanceAddressPolicy(security.allowedNetworks, [
    { ip: settings.manage.ip, port: settings.manage.port },
    { ip: settings.predict.ip, port: settings.predict.port },
  ]);
  // The OpenTelemetry SDK (hundreds of modules) is loaded only when tracing is configured.
  const otlp =
    settings.tracing === undefined ? undefined : (await import('../proxy/telemetry/otlp-export.ts')).createOtlpTracing(settings.tracing);
  const coordinator = createCoordinator({
    notReadyReason: () => ha?.notReadyReason(),
    ...(security.managementToken === undefined ? {} : { managementToken: security.managementToken }),
    ...(security.apiKeys === undefined ? {} : { apiKeys: security.apiKeys }),
    forwardAuthorization: security.forwardAuthorization,
    addressPolicy,
    ...(security.rateLimit === undefined ? {} : { rateLimit: security.rateLimit }),
    ...(security.apiKeyTenants === undefined ? {} : { apiKeyTenants: security.apiKeyTenants }),
    admission: settings.admission,
    bodyLimitBytes: settings.bodyLimitBytes,
    policy: settings.policy,
    circuitCooldownMs: settings.circuitCooldownMs,
    localPrefill: settings.localPrefill,
    kv: kvOptionsOf(settings.file),
    maxRequestsPerInstance: settings.singleNodeMaxRequests,
    proxy: settings.proxy,
    ...(otlp === undefined ? {} : { tracing: otlp.tracing }),
    processMetrics: true,
  });
  if (haSettings !== undefined) {
    const log = (line: string): void => console.log(`pdlink coordinator: ${line}`);
    const { store: where, mode } = haSettings;
    log(
      `${mode === 'master_standby' ? 'master/standby' : 'active/active'} on etcd ${where.endpoints.join(',')} (cluster ${where.cluster})`,
    );
    // The HA modules (election, store, its metrics) are loaded only when a store is configured.
    const [{ CoordinatorHa }, { openStore }] = await Promise.all([import('../apps/coordinator-ha.ts'), import('../store/open.ts')]);
    ha = new CoordinatorHa({
      mode,
      store: await openStore(where),
      registry: coordinator.registry,
      metrics: coordinator.metrics,
      ttlSeconds: where.leaseTtlSeconds,
      log,
    });
    // Ready on the last stored snapshot before listening (bounded by the store's call deadline).
    await ha.loadSnapshot();
  }
  let listeners;
  try {
    listeners = await startListeners([
      {
        name: 'management',
        hostname: settings.manage.ip,
        port: settings.manage.port,
        fetch: coordinator.managementFetch,
        posts: coordinator.managementPosts,
        ...(settings.manage.tls ? { tls: settings.manage.tls } : {}),
        idleTimeoutSeconds: settings.keepAliveSeconds,
        maxConnections: security.maxConnections,
      },
      {
        name: 'inference',
        hostname: settings.predict.ip,
        port: settings.predict.port,
        fetch: coordinator.inferenceFetch,
        posts: coordinator.inferencePosts,
        ...(settings.predict.tls ? { tls: settings.predict.tls } : {}),
        idleTimeoutSeconds: settings.keepAliveSeconds,
        maxConnections: security.maxConnections,
        renderRefusal: openAiErrorBody,
      },
    ]);
  } catch (err) {
    // Nothing may stay open after a failed start: the listeners already up were stopped, the core goes too.
    await ha?.close();
    await coordinator.close();
    await otlp?.shutdown();
    throw err;
  }
  const [manage, predict] = listeners;
  addressPolicy.addOwn([
    { ip: settings.manage.ip, port: manage!.port },
    { ip: settings.predict.ip, port: predict!.port },
  ]);
  // master/standby: runs for master under the management URL, the lock's value.
  ha?.campaign(listeners[0]!.url);
  await untilSignal(async () => {
    await Promise.all(listeners.map((l) => l.stop()));
    await ha?.close();
    await coordinator.close();
    // The last spans are still queued for their batch: send them before the process goes.
    await otlp?.shutdown();
  });
}
