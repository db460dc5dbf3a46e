/**
 * `pdlink instance`: the agent beside one inference engine. Opens one device-runtime context per
 * local device, serves the management listener, and runs until SIGINT/SIGTERM.
 */
import { agentOptionsOf, resolveInstanceSettings, type InstanceArgs, MANAGEMENT_IP_ENV } from '../config/instance.ts';
import { ConfigError, PdlinkError } from '../core/errors.ts';
import { createInstanceAgent } from '../apps/agent.ts';
import { formatIpPort } from '../links/endpoint.ts';
import { parseCliIp, parseCliPort } from './values.ts';
import { listeningLine, parseStringOptions, startListeners, untilSignal } from './common.ts';
import { shutdownSignals } from './shutdown.ts';

export const INSTANCE_HELP = `Usage: pdlink instance [options]

Serves the instance agent: the role API (POST /v1/role/{prefill|decode}, GET /v1/status),
link management (POST /v1/links/link, POST /v1/links/unlink, GET /v1/links), KV block
caches and transfers (POST /v1/kv/caches, /v1/kv/pull, /v1/kv/push, /v1/kv/write,
/v1/kv/read; GET /v1/kv/caches, /v1/kv/transfers, /v1/kv/links), probes and /metrics on
the management listener, and one device-runtime context per local device listening on
device_ip:(link_base_port + device_logical_id).

Options:
  --config PATH        configuration file (MindIE config.json layout: ServerConfig.ipAddress,
                       managementIpAddress, port, managementPort; pdlink.devices,
                       pdlink.link_base_port, pdlink.cluster_id, pdlink.pool)
  --manage_ip IP       management listener address (default: env ${MANAGEMENT_IP_ENV},
                       then managementIpAddress, then ipAddress, then 127.0.0.2,
                       MindIE's managementIpAddress default)
  --manage_port PORT   management listener port (default: managementPort, then port, then 1026;
                       0 = any free port)
  -h, --help           show this help

A device's cluster id is its configured cluster_id, else computed from its link address:
IPv4 as a 32-bit number × 65536 + port (IPv6: a 63-bit hash with the top bit set).

Environment: PDLINK_SAME_HOST_FASTPATH=0 makes links carry transfers over TCP even between
peers on one host (default: shared memory where both ends share the host).
`;

/**
 * Parses the instance command's arguments.
 * @example parseInstanceArgs(['--manage_port', '0'])
 */
export function parseInstanceArgs(argv: string[]): InstanceArgs & { help: boolean } {
  const { values, help } = parseStringOptions(argv, ['config', 'manage_ip', 'manage_port'], INSTANCE_HELP);
  const args: InstanceArgs & { help: boolean } = { help };
  if (values.config !== undefined) args.config = values.config;
  if (values.manage_ip !== undefined) args.manageIp = parseCliIp('manage_ip', values.manage_ip);
  if (values.manage_port !== undefined) args.managePort = parseCliPort('manage_port', values.manage_port);
  return args;
}

/** Runs the instance command until a signal stops it. */
export async function runInstance(argv: string[]): Promise<void> {
  shutdownSignals();
  const args = parseInstanceArgs(argv);
  if (args.help) {
    console.log(INSTANCE_HELP);
    return;
  }
  const settings = resolveInstanceSettings(args, process.env);
  let agent;
  try {
    agent = await createInstanceAgent({ ...agentOptionsOf(settings), processMetrics: true });
  } catch (err) {
    if (err instanceof PdlinkError) throw new ConfigError(err.message);
    throw err;
  }
  // The device contexts listen already; their lines (each cluster id before its listening line)
  // are printed with the management line once that is up too, so a harness that sees them can
  // rely on every listener serving.
  const deviceLines = settings.devices.flatMap((d) => [
    `pdlink: link-${d.endpoint} cluster_id ${d.clusterId}`,
    listeningLine(`link-${d.endpoint}`, formatIpPort(d)),
  ]);
  let listeners;
  try {
    listeners = await startListeners(
      [
        {
          name: 'management',
          hostname: settings.manage.ip,
          port: settings.manage.port,
          fetch: agent.managementApp.fetch,
          ...(settings.tls.management === undefined ? {} : { tls: settings.tls.management }),
          maxConnections: settings.management.maxConnections,
        },
      ],
      deviceLines,
    );
  } catch (err) {
    await agent.close();
    throw err;
  }
  await untilSignal(async () => {
    await Promise.all(listeners.map((l) => l.stop()));
    await agent.close();
  });
}
