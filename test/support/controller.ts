/**
 * A `pdlink controller` process over a simulated cluster launched unwired, and what its tests
 * watch: the ids the Coordinator holds, the controller's view, and a steady client load whose
 * failures are kept with their start time.
 */
import { until } from '../../src/sim/cluster/process.ts';
import type { SimCluster, SimEngineHandle } from '../../src/sim/cluster/cluster.ts';
import { startSimController, writeTopology as writeSimTopology, type SimController } from '../../src/sim/cluster/controller.ts';
import { E2E_DEADLINE_MS, proxyPost } from './sim-cluster.ts';

/** Short timings, so a fault test runs in seconds. */
export const FAST_TIMING = {
  cluster_synchronization_seconds: 0.2,
  role_retry_seconds: 0.5,
  instance_heartbeat_timeout_seconds: 1,
  status_poll_seconds: 0.1,
  http_timeout_seconds: 2,
  drain_timeout_seconds: 10,
};

export type RunningController = SimController;

/**
 * Writes a topology file of the given engines and starts a controller on it.
 * @example const controller = await startController(cluster, cluster.engines);
 */
export function startController(
  cluster: SimCluster,
  engines: readonly SimEngineHandle[],
  timing: Record<string, number> = FAST_TIMING,
): Promise<RunningController> {
  return startSimController(cluster, engines, timing);
}

/** Rewrites the topology file (the controller watches it). */
export function writeTopology(
  cluster: SimCluster,
  path: string,
  engines: readonly SimEngineHandle[],
  timing: Record<string, number> = FAST_TIMING,
): void {
  writeSimTopology(cluster, path, engines, timing);
}

/** Ids the Coordinator holds, ascending ([] when it answers with none or not at all). */
export async function coordinatorIds(cluster: SimCluster): Promise<number[]> {
  try {
    const view = (await (await fetch(`${cluster.coordinatorUrl}/v1/instances`, { headers: cluster.authorization() })).json()) as {
      instances: { id: number }[];
    };
    return view.instances.map((i) => i.id).sort((a, b) => a - b);
  } catch {
    return [];
  }
}

/**
 * Waits until the Coordinator's ids satisfy `ok`; resolves with the time it first saw them.
 * @example await snapshotWhen(cluster, (ids) => ids.length === 4);
 */
export async function snapshotWhen(cluster: SimCluster, ok: (ids: number[]) => boolean, deadlineMs = E2E_DEADLINE_MS): Promise<number> {
  let last: number[] = [];
  return until(
    async () => {
      last = await coordinatorIds(cluster);
      return ok(last) ? Date.now() : undefined;
    },
    deadlineMs,
    () => `Coordinator holds ${JSON.stringify(last)}`,
  );
}

/** `GET /v1/cluster` of the controller. */
export async function clusterView(
  controller: RunningController,
): Promise<{ instances: { id: number; state: string; in_snapshot: boolean }[] }> {
  return (await (await fetch(`${controller.url}/v1/cluster`)).json()) as {
    instances: { id: number; state: string; in_snapshot: boolean }[];
  };
}

export interface Outcome {
  readonly startedAt: number;
  readonly endedAt: number;
  readonly status: number;
  readonly error: string | null;
}

/**
 * Clients sending short completions back to back until stopped.
 * @example const load = new SteadyLoad(cluster, 4); ...; const outcomes = await load.stop();
 */
export class SteadyLoad {
  readonly outcomes: Outcome[] = [];
  readonly #cluster: SimCluster;
  readonly #clients: Promise<void>[] = [];
  #running = true;
  #seq = 0;

  readonly #maxTokens: number;

  constructor(cluster: SimCluster, clients: number, prefix = 'load', maxTokens = 4) {
    this.#cluster = cluster;
    this.#maxTokens = maxTokens;
    for (let c = 0; c < clients; c++) this.#clients.push(this.#client(prefix));
  }

  /** Outcomes of requests started at or after `from` that failed. */
  failedSince(from: number): Outcome[] {
    return this.outcomes.filter((o) => o.startedAt >= from && o.status !== 200);
  }

  /** Waits until `n` more requests have ended (proof the load is flowing). */
  async more(n: number): Promise<void> {
    const target = this.outcomes.length + n;
    await until(
      async () => (this.outcomes.length >= target ? true : undefined),
      E2E_DEADLINE_MS,
      () => `${this.outcomes.length} of ${target} requests ended`,
    );
  }

  async stop(): Promise<Outcome[]> {
    this.#running = false;
    await Promise.all(this.#clients);
    return this.outcomes;
  }

  async #client(prefix: string): Promise<void> {
    while (this.#running) {
      const id = `${prefix}-${++this.#seq}`;
      const startedAt = Date.now();
      let status = 0;
      let error: string | null = null;
      try {
        const res = await proxyPost(
          this.#cluster,
          '/v1/completions',
          { model: this.#cluster.model, prompt: `steady ${id} `.repeat(8), max_tokens: this.#maxTokens },
          id,
        );
        status = res.status;
        const text = await res.text();
        if (status !== 200) error = text;
      } catch (err) {
        error = String(err);
      }
      this.outcomes.push({ startedAt, endedAt: Date.now(), status, error });
    }
  }
}
