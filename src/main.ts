#!/usr/bin/env -S BUN_CONFIG_MAX_HTTP_REQUESTS=65535 BUN_JSC_forceRAMSize=268435456 bun
/**
 * The `pdlink` command: dispatches to a sub-command. No business logic lives here.
 */
import { ConfigError } from './core/errors.ts';
import { shutdownSignals } from './cli/shutdown.ts';

// Before anything else: a signal at any moment after start must close the process cleanly.
shutdownSignals();

const USAGE = `Usage: pdlink <command> [options]

Commands:
  coordinator   serve the Coordinator (topology refresh, scheduling, PD proxy)
  controller    run the control loop: roles, health, snapshots to the Coordinators, scale out/in
  instance      serve the instance agent beside one inference engine (role API, links, KV transfers)
  sim-engine    engine simulator for tests, benchmarks and demos (not an inference engine)
  sim-cluster   one prefill and one decode engine simulator on loopback, linked, for a first request
  bench         measure TTFT, TPOT and goodput of any OpenAI-compatible endpoint (trace or synthetic load)

Run 'pdlink <command> --help' for a command's options.
`;

type Command = (argv: string[]) => Promise<void>;

const COMMANDS: Record<string, () => Promise<Command>> = {
  coordinator: async () => (await import('./cli/coordinator.ts')).runCoordinator,
  controller: async () => (await import('./cli/controller.ts')).runController,
  instance: async () => (await import('./cli/instance.ts')).runInstance,
  'sim-engine': async () => (await import('./cli/sim-engine.ts')).runSimEngine,
  'sim-cluster': async () => (await import('./cli/sim-cluster.ts')).runSimCluster,
  bench: async () => (await import('./cli/bench.ts')).runBenchCommand,
};

async function main(argv: string[]): Promise<number> {
  const [name, ...rest] = argv;
  if (name === undefined || name === '--help' || name === '-h' || name === 'help') {
    console.log(USAGE);
    return name === undefined ? 2 : 0;
  }
  const load = COMMANDS[name];
  if (load === undefined) {
    console.error(`pdlink: unknown command ${JSON.stringify(name)}\n\n${USAGE}`);
    return 2;
  }
  try {
    await (
      await load()
    )(rest);
    return 0;
  } catch (err) {
    if (err instanceof ConfigError) {
      console.error(`pdlink ${name}: ${err.message}`);
      return err.exitCode;
    }
    console.error(`pdlink ${name}: fatal:`, err);
    return 1;
  }
}

process.exit(await main(process.argv.slice(2)));
