/**
 * How a simulated cluster starts its processes: the Coordinator's and an engine's command lines,
 * an engine's config file from its layout, and the extras every child shares (management token
 * file, output lines, start-up deadline). The launcher starts, restarts and adds processes with the
 * same arguments, so they are built here once. Each process runs on Bun or Deno, as asked.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { MANAGEMENT_TOKEN_ENV } from '../../core/secret-env.ts';
import { engineConfig, type EngineLayout } from './cluster-bodies.ts';
import type { PlatformName, SimClusterOptions, SimClusterTls, SimEngineSettings } from './cluster-options.ts';
import { platform } from '../../platform/index.ts';
import { withEngineTls } from './cluster-tls.ts';
import { spawnListening, type ManagedProcess } from './process.ts';
import { launchEnv } from '../../platform/launch-env.ts';
import { MODULE_ROOT, pdlinkModule } from '../../platform/module-path.ts';

const REPO_ROOT = join(MODULE_ROOT, '..');

/** The Coordinator's entry (`pdlink coordinator`). */
const COORDINATOR_ENTRY = pdlinkModule('main');

/** A simulated engine's entry (`pdlink sim-engine`). */
const SIM_ENGINE_ENTRY = pdlinkModule('cli/sim-engine');

/**
 * The command that runs a pdlink entry on `name` (default: this process's runtime): the runtime
 * running this process by its own path, the other one as installed beside pdlink by npm.
 * @example platformCommand('deno') // ['/…/node_modules/.bin/deno', 'run', '-A']
 */
export function platformCommand(name: PlatformName = platform.name): string[] {
  const executable = name === platform.name ? process.execPath : join(REPO_ROOT, 'node_modules', '.bin', name);
  return name === 'deno' ? [executable, 'run', '-A'] : [executable];
}

/**
 * The Coordinator's arguments after the runtime: its entry, its config file, both listeners on `ip`
 * with ports chosen by the system.
 * @example coordinatorArgs(join(dir, 'ms_coordinator.json'), '127.150.7.1')
 */
export function coordinatorArgs(configPath: string, ip: string): string[] {
  return [
    COORDINATOR_ENTRY,
    'coordinator',
    '--config',
    configPath,
    '--manage_ip',
    ip,
    '--manage_port',
    '0',
    '--predict_ip',
    ip,
    '--predict_port',
    '0',
  ];
}

/**
 * Starts the Coordinator with those arguments (after the runtime) in the cluster's directory.
 * @example const coordinator = await startCoordinator(coordinatorArgs(configPath, ip), dir, options);
 */
export function startCoordinator(args: readonly string[], dir: string, options: SimClusterOptions): Promise<ManagedProcess> {
  return spawnListening({
    name: 'coordinator',
    command: [...platformCommand(options.platforms?.coordinator), ...args],
    listeners: ['management', 'inference'],
    env: launchEnv(),
    cwd: dir,
    ...spawnExtras(options),
  });
}

/** What every engine of one cluster shares: the directory of its files, the link base port, the TLS files. */
export interface EnginePlace {
  readonly dir: string;
  readonly linkBasePort: number;
  readonly tls: SimClusterTls | undefined;
}

/**
 * Writes an engine's config file into the cluster's directory and starts the engine; `ports` pins
 * its listeners to the ports it had (a restart), otherwise they are chosen by the system.
 * @example const proc = await startEngine(place, layout, 'pdlink-sim', CLUSTER_ENGINE_DEFAULTS, options);
 */
export async function startEngine(
  place: EnginePlace,
  layout: EngineLayout,
  model: string,
  settings: SimEngineSettings,
  options: SimClusterOptions,
  ports?: { readonly manage: string; readonly inference: string },
): Promise<ManagedProcess> {
  const path = join(place.dir, `${layout.name}.json`);
  writeFileSync(path, JSON.stringify(withEngineTls(engineConfig(layout, place.linkBasePort), place.tls)));
  const args = engineArgs(layout, path, model, settings, options.kvEvents === true);
  return spawnListening({
    name: layout.name,
    command: [
      ...platformCommand(options.platforms?.engines),
      SIM_ENGINE_ENTRY,
      ...(ports === undefined
        ? args
        : args.map((arg, i, all) => (all[i - 1] === '--manage_port' ? ports.manage : all[i - 1] === '--port' ? ports.inference : arg))),
    ],
    listeners: options.kvEvents === true ? ['management', 'inference', 'kv-events', 'kv-replay'] : ['management', 'inference'],
    ...spawnExtras(options),
  });
}

function engineArgs(layout: EngineLayout, configPath: string, model: string, s: SimEngineSettings, kvEvents: boolean): string[] {
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
    '--decode_batch_slowdown',
    String(s.decodeBatchSlowdown),
    ...(s.prefixCacheBlocks === undefined ? [] : ['--prefix_cache_blocks', String(s.prefixCacheBlocks)]),
    '--max_model_len',
    String(s.maxModelLen),
    '--kv_lease_ms',
    String(s.kvLeaseMs),
    '--pull_timeout_ms',
    String(s.pullTimeoutMs),
    '--role_switch_ms',
    String(s.roleSwitchMs),
    '--protocol',
    s.protocol,
    ...(s.tokenizer === undefined ? [] : ['--tokenizer', s.tokenizer]),
    // The KV-event sockets on the engine's address, ports chosen by the system (a restart keeps none: its sequence starts over).
    ...(kvEvents
      ? [
          '--kv_events_port',
          '0',
          '--kv_events_replay_port',
          '0',
          '--kv_events_encoding',
          s.kvEventsEncoding,
          '--kv_events_hashes',
          s.kvEventsHashes,
        ]
      : []),
  ];
}

export function tokenFileOf(options: SimClusterOptions): string | undefined {
  return options.managementTokenFile ?? (process.env[MANAGEMENT_TOKEN_ENV] || undefined);
}

function spawnExtras(options: SimClusterOptions): {
  onLine?: (line: string) => void;
  deadlineMs?: number;
  env?: Record<string, string>;
} {
  const tokenFile = tokenFileOf(options);
  return {
    // The path, never the token, goes to the children (the same env for all of them).
    ...(tokenFile === undefined ? {} : { env: { ...launchEnv(), [MANAGEMENT_TOKEN_ENV]: tokenFile } }),
    ...(options.onLine === undefined ? {} : { onLine: options.onLine }),
    ...(options.deadlineMs === undefined ? {} : { deadlineMs: options.deadlineMs }),
  };
}
