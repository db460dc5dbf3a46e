/**
 * Every metric each pdlink process exposes, read from the registries of the real processes'
 * composition roots: a Coordinator (with its HA part on an in-memory store), an instance agent with
 * one device, and a controller (with its leadership on an in-memory store). Nothing is listed by
 * hand, so a metric added to the code appears in the reference the next time it is generated.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInstanceAgent } from '../../src/apps/agent.ts';
import { createControllerApp } from '../../src/apps/controller.ts';
import { CoordinatorHa } from '../../src/apps/coordinator-ha.ts';
import { createCoordinator } from '../../src/apps/coordinator.ts';
import { loadTopology } from '../../src/config/controller.ts';
import { createRegistry, type Registry } from '../../src/core/metrics.ts';
import { MemoryStore } from '../../src/store/memory.ts';

export type ProcessName = 'coordinator' | 'instance' | 'controller';

export interface MetricRow {
  readonly name: string;
  readonly type: string;
  readonly labels: readonly string[];
  readonly help: string;
  readonly processes: readonly ProcessName[];
}

interface Listed {
  readonly name: string;
  readonly help: string;
  readonly labelNames?: readonly string[];
  readonly type?: string;
  get(): Promise<{ type: string }> | { type: string };
}

async function read(registry: Registry): Promise<Omit<MetricRow, 'processes'>[]> {
  const rows: Omit<MetricRow, 'processes'>[] = [];
  for (const metric of registry.getMetricsAsArray() as unknown as Listed[]) {
    const type = metric.type ?? (await metric.get()).type;
    rows.push({ name: metric.name, type: String(type), labels: [...(metric.labelNames ?? [])], help: metric.help });
  }
  return rows;
}

const TOPOLOGY = {
  coordinators: [],
  instances: [
    {
      id: 1,
      manage_url: 'http://127.0.0.1:1',
      inference_url: 'http://127.0.0.1:2',
      model_name: 'm',
      server_ip: '127.0.0.1',
      devices: [{ device_logical_id: '0', device_ip: '127.0.0.1' }],
      role: 'prefill',
    },
  ],
};

/** The registries of the three processes, each built as its command builds it. */
async function registries(): Promise<Record<ProcessName, Registry>> {
  const coordinator = createRegistry();
  const pdlink = createCoordinator({ metrics: coordinator, processMetrics: true });
  const ha = new CoordinatorHa({
    mode: 'master_standby',
    store: new MemoryStore(),
    registry: pdlink.registry,
    metrics: coordinator,
    ttlSeconds: 2,
  });

  const instance = createRegistry();
  const agent = await createInstanceAgent({
    devices: [{ endpoint: '0', ip: '127.0.0.1', port: 0, clusterId: 7n }],
    metrics: instance,
    processMetrics: true,
  });

  const controller = createRegistry();
  const dir = mkdtempSync(join(tmpdir(), 'pdlink-reference-'));
  try {
    const path = join(dir, 'topology.json');
    writeFileSync(path, JSON.stringify(TOPOLOGY));
    const { spec } = loadTopology(path, {});
    const app = createControllerApp({ spec, metrics: controller, processMetrics: true, ha: { store: new MemoryStore(), ttlSeconds: 2 } });
    await app.close();
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  await ha.close();
  await pdlink.close();
  await agent.close();
  return { coordinator, instance, controller };
}

/**
 * Every metric, once, with the processes that expose it, sorted by name.
 * @example const rows = await metricRows(); rows[0].name // 'pdlink_circuit_state'
 */
export async function metricRows(): Promise<MetricRow[]> {
  const byName = new Map<string, MetricRow>();
  for (const [process, registry] of Object.entries(await registries()) as [ProcessName, Registry][]) {
    for (const row of await read(registry)) {
      const seen = byName.get(row.name);
      byName.set(row.name, seen === undefined ? { ...row, processes: [process] } : { ...seen, processes: [...seen.processes, process] });
    }
  }
  return [...byName.values()].sort((a, b) => a.name.localeCompare(b.name));
}
