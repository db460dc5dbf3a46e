/**
 * The pdlink Coordinator as the proxy CPU benchmark runs it: `pdlink coordinator` with its
 * arguments, plus the benchmark's control listener (proxy-control.ts) in the same process, so the
 * proxy measured is the one operators start.
 *
 * Run: bun bench/proxy-pdlink-host.ts --config … (the arguments of `pdlink coordinator`)
 */
import { runCoordinator } from '../src/cli/coordinator.ts';
import { startControl } from './proxy-control.ts';

startControl();
await runCoordinator(process.argv.slice(2));
