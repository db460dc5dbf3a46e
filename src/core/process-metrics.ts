/**
 * The process metrics (CPU, memory, file descriptors, event-loop lag, heap, GC, version) that
 * prom-client's `collectDefaultMetrics` registers, under the same names, without loading its CPU
 * module: that one loads the OpenTelemetry API (about 4 MiB resident in Bun) for exemplars pdlink
 * never asks for. The other groups are prom-client's own modules, loaded one by one; the CPU
 * counters are kept here, read from `process.cpuUsage()` when scraped.
 */
import eventLoopLag from 'prom-client/lib/metrics/eventLoopLag.js';
import gc from 'prom-client/lib/metrics/gc.js';
import heapSizeAndUsed from 'prom-client/lib/metrics/heapSizeAndUsed.js';
import heapSpacesSizeAndUsed from 'prom-client/lib/metrics/heapSpacesSizeAndUsed.js';
import osMemoryHeap from 'prom-client/lib/metrics/osMemoryHeap.js';
import processHandles from 'prom-client/lib/metrics/processHandles.js';
import processMaxFileDescriptors from 'prom-client/lib/metrics/processMaxFileDescriptors.js';
import processOpenFileDescriptors from 'prom-client/lib/metrics/processOpenFileDescriptors.js';
import processRequests from 'prom-client/lib/metrics/processRequests.js';
import processResources from 'prom-client/lib/metrics/processResources.js';
import processStartTime from 'prom-client/lib/metrics/processStartTime.js';
import version from 'prom-client/lib/metrics/version.js';
import { Counter, type Registry } from './metrics.ts';

/** Event-loop lag sampling resolution, ms (prom-client's default). */
const EVENT_LOOP_RESOLUTION_MS = 10;

/**
 * Registers the process metrics on `registry`, each name prefixed with `prefix`.
 * @example collectProcessMetrics(registry, 'pdlink_process_'); // pdlink_process_cpu_seconds_total, …
 */
export function collectProcessMetrics(registry: Registry, prefix: string): void {
  cpuCounters(registry, prefix);
  const config = { prefix, eventLoopMonitoringPrecision: EVENT_LOOP_RESOLUTION_MS };
  const groups = [processStartTime, osMemoryHeap, processOpenFileDescriptors, processMaxFileDescriptors, eventLoopLag];
  // Resource counts need a runtime that lists its resources.
  if (typeof (process as { getActiveResourcesInfo?: unknown }).getActiveResourcesInfo === 'function') groups.push(processResources);
  groups.push(processHandles, processRequests, heapSizeAndUsed, heapSpacesSizeAndUsed, version, gc);
  for (const register of groups) register(registry, config);
}

/** User, system and total CPU seconds of the process since it started, advanced at each scrape. */
function cpuCounters(registry: Registry, prefix: string): void {
  let last = process.cpuUsage();
  const system = new Counter({
    name: `${prefix}process_cpu_system_seconds_total`,
    help: 'CPU seconds spent in the kernel.',
    registers: [],
  });
  const total = new Counter({
    name: `${prefix}process_cpu_seconds_total`,
    help: 'CPU seconds spent, user and kernel together.',
    registers: [],
  });
  const user = new Counter({
    name: `${prefix}process_cpu_user_seconds_total`,
    help: 'CPU seconds spent in user space.',
    registers: [],
    // The first of the three to be collected reads the clock for all of them.
    collect() {
      const now = process.cpuUsage();
      const userUs = now.user - last.user;
      const systemUs = now.system - last.system;
      last = now;
      user.inc(userUs / 1e6);
      system.inc(systemUs / 1e6);
      total.inc((userUs + systemUs) / 1e6);
    },
  });
  // Registered in prom-client's order: user, system, total (collect runs before the others are read).
  registry.registerMetric(user);
  registry.registerMetric(system);
  registry.registerMetric(total);
}
