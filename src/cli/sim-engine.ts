/**
 * `pdlink sim-engine`: the engine simulator. One process is one simulated inference engine with
 * its pdlink instance agent embedded, the way a real engine process owns its LLM-DataDist object:
 * the agent's device contexts, link manager, role API and KV transfer API, plus an
 * OpenAI-compatible inference listener. Runs until SIGINT/SIGTERM.
 */
import { Hono } from 'hono';
import { agentOptionsOf, ALLOW_ALL_ZERO_KEY, DEFAULT_SERVER_IP, resolveInstanceSettings } from '../config/instance.ts';
import { loadConfigFile } from '../config/load.ts';
import { ConfigError, PdlinkError } from '../core/errors.ts';
import { onError } from '../http/envelope.ts';
import { notFoundOf } from '../http/methods.ts';
import { createInstanceAgent, type InstanceAgent } from '../apps/agent.ts';
import { formatIpPort } from '../links/endpoint.ts';
import { InstanceConfigFile } from '../schema/instance-config.ts';
import { agentKv } from '../sim/engine/kv/agent-kv.ts';
import { managementAuth } from '../http/auth.ts';
import { simControlApp } from '../sim/engine/http/control-app.ts';
import { SimEngine } from '../sim/engine/engine.ts';
import { simInferenceApp } from '../sim/engine/http/inference-app.ts';
import { prefixCacheApp, publishKvEvents, type SimKvEvents } from '../sim/engine/kv/kv-events.ts';
import { endpointText } from '../zmtp/endpoint.ts';
import { ModelTokenizer } from '../tokenizer/model-tokenizer.ts';
import type { SimEngineArgs } from '../sim/engine/options.ts';
import { parseSimEngineArgs, SIM_ENGINE_HELP } from './sim-engine-options.ts';
import { refuseAllInterfaces } from '../net/all-interfaces.ts';
import { listeningLine, startListeners, untilSignal } from './common.ts';
import type { ClientTlsOptions } from '../platform/tls-options.ts';
import { shutdownSignals } from './shutdown.ts';

/** Inference listener port default, as MindIE's ServerConfig has it. */
export const DEFAULT_INFERENCE_PORT = 1025;

/**
 * Runs the engine simulator until a signal stops it.
 * @example await runSimEngine(['--role', 'decode', '--config', 'd0.json', '--port', '0', '--manage_port', '0']);
 */
export async function runSimEngine(argv: string[]): Promise<void> {
  shutdownSignals();
  const args = parseSimEngineArgs(argv);
  if (args.help) {
    console.log(SIM_ENGINE_HELP);
    return;
  }
  const settings = resolveInstanceSettings(
    {
      ...(args.config === undefined ? {} : { config: args.config }),
      ...(args.manageIp === undefined ? {} : { manageIp: args.manageIp }),
      ...(args.managePort === undefined ? {} : { managePort: args.managePort }),
    },
    process.env,
  );
  const server = args.config === undefined ? {} : (loadConfigFile(args.config, InstanceConfigFile).ServerConfig ?? {});
  const inference = { ip: args.ip ?? server.ipAddress ?? DEFAULT_SERVER_IP, port: args.port ?? server.port ?? DEFAULT_INFERENCE_PORT };
  refuseAllInterfaces('inference address', inference.ip, settings.allowAllZeroIp, ALLOW_ALL_ZERO_KEY);

  let agent: InstanceAgent;
  try {
    agent = await createInstanceAgent({ ...agentOptionsOf(settings), processMetrics: true });
  } catch (err) {
    if (err instanceof PdlinkError) throw new ConfigError(err.message);
    throw err;
  }
  let engine: SimEngine;
  try {
    engine = await startEngine(args, agent, settings.tls.client);
  } catch (err) {
    await agent.close();
    throw err;
  }

  let kvEvents: SimKvEvents | undefined;
  try {
    kvEvents = await publishKvEvents(args, settings.manage.ip, engine.prefixCache);
  } catch (err) {
    engine.close();
    await agent.close();
    throw new ConfigError(`cannot publish KV events on ${settings.manage.ip}: ${err instanceof Error ? err.message : String(err)}`);
  }

  // The agent's status carries the engine's free slots and blocks, as an engine embedding it would report.
  agent.reportResources(() => engine.resources());
  agent.role.onRoleSwitch((_from, to) => engine.switchRole(to));
  const management = new Hono();
  management.onError(onError);
  management.notFound(notFoundOf(management));
  // The simulator's own routes are management routes too: the same token guards them.
  management.use('*', managementAuth(settings.management.managementToken));
  management.route('/', simControlApp(engine));
  management.route('/', prefixCacheApp(engine.prefixCache));
  management.route('/', agent.managementApp);

  // Every line waits until every listener is up (see startListeners).
  const preamble = [
    ...settings.devices.flatMap((d) => [
      `pdlink: link-${d.endpoint} cluster_id ${d.clusterId}`,
      listeningLine(`link-${d.endpoint}`, formatIpPort(d)),
    ]),
    `pdlink: sim-engine (simulator) role ${args.role} model ${args.model}`,
    ...(kvEvents === undefined
      ? []
      : [
          listeningLine('kv-events', endpointText(settings.manage.ip, kvEvents.port)),
          ...(kvEvents.replayPort === undefined ? [] : [listeningLine('kv-replay', endpointText(settings.manage.ip, kvEvents.replayPort))]),
        ]),
  ];
  let listeners;
  try {
    listeners = await startListeners(
      [
        {
          name: 'management',
          hostname: settings.manage.ip,
          port: settings.manage.port,
          fetch: management.fetch,
          ...(settings.tls.management === undefined ? {} : { tls: settings.tls.management }),
          maxConnections: settings.management.maxConnections,
        },
        {
          name: 'inference',
          hostname: inference.ip,
          port: inference.port,
          fetch: simInferenceApp(engine).fetch,
          ...(settings.tls.inference === undefined ? {} : { tls: settings.tls.inference }),
        },
      ],
      preamble,
    );
  } catch (err) {
    await kvEvents?.close();
    engine.close();
    await agent.close();
    throw err;
  }
  // Decoders tell this engine on its management listener that they have pulled its blocks.
  engine.notifyAddress = { host: settings.manage.ip, port: listeners[0]!.port };
  engine.releases.token = settings.management.managementToken;
  await untilSignal(async () => {
    await Promise.all(listeners.map((l) => l.stop()));
    await kvEvents?.close();
    engine.close();
    await agent.close();
  });
}

async function startEngine(args: SimEngineArgs, agent: InstanceAgent, notifyTls: ClientTlsOptions | undefined): Promise<SimEngine> {
  let tokenizer: ModelTokenizer | undefined;
  try {
    tokenizer = args.tokenizer === undefined ? undefined : ModelTokenizer.load(args.tokenizer);
  } catch (err) {
    throw new ConfigError(`--tokenizer: ${err instanceof Error ? err.message : String(err)}`);
  }
  const engine = new SimEngine({
    ...(notifyTls === undefined ? {} : { notifyTls }),
    ...(tokenizer === undefined ? {} : { tokenizer }),
    role: args.role,
    model: args.model,
    devices: agent.devices.map((d) => ({ endpoint: d.endpoint, clusterId: d.clusterId })),
    kv: agentKv(agent.transfers, agent.linkManager),
    numBlocks: args.numBlocks,
    blockBytes: args.blockBytes,
    blockTokens: args.blockTokens,
    prefillMsPerToken: args.prefillMsPerToken,
    decodeMsPerToken: args.decodeMsPerToken,
    decodeBatchSlowdown: args.decodeBatchSlowdown,
    ...(args.prefixCacheBlocks === undefined ? {} : { prefixCacheBlocks: args.prefixCacheBlocks }),
    maxModelLen: args.maxModelLen,
    kvLeaseMs: args.kvLeaseMs,
    pullTimeoutMs: args.pullTimeoutMs,
    roleSwitchMs: args.roleSwitchMs,
    protocol: args.protocol,
  });
  try {
    await engine.start();
  } catch (err) {
    throw new ConfigError(`cannot register the simulated KV cache: ${err instanceof Error ? err.message : String(err)}`);
  }
  return engine;
}

// Runnable on its own too (`bun src/cli/sim-engine.ts --role prefill`), which the cluster
// launcher uses so it does not depend on how the pdlink command is wired.
if (import.meta.main) {
  try {
    await runSimEngine(process.argv.slice(2));
    process.exit(0);
  } catch (err) {
    if (err instanceof ConfigError) {
      console.error(`pdlink sim-engine: ${err.message}`);
      process.exit(err.exitCode);
    }
    console.error('pdlink sim-engine: fatal:', err);
    process.exit(1);
  }
}
