/**
 * A lone controller restarted under load loses no request: kill -9, SIGTERM, and a restart that
 * changes the timing (which applies only at start), three times each. Until the new controller has
 * judged every instance it pushes no snapshot, so the Coordinator keeps what it holds instead of
 * emptying for the first push (which answered every request in that window 503). The Coordinator's
 * registry is sampled all along and never holds fewer instances than before.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { SimCluster } from '../src/sim/cluster/cluster.ts';
import { FAST_TIMING, SteadyLoad, snapshotWhen, startController, type RunningController } from './support/controller.ts';

const RESTARTS = Number(process.env['CONTROLLER_RESTARTS'] ?? 3);

let cluster: SimCluster;
let controller: RunningController;
beforeAll(async () => {
  cluster = await SimCluster.start({ prefill: 2, decode: 2, wire: false });
  controller = await startController(cluster, cluster.engines);
  await snapshotWhen(cluster, (ids) => ids.length === 4);
}, 120_000);
afterAll(async () => {
  await controller?.process.stop('SIGKILL');
  await cluster?.stop();
});

/** The fewest instances the Coordinator held over the samples taken until stopped. */
function sampleHeld(): { stop(): Promise<{ fewest: number; samples: number }> } {
  let running = true;
  let fewest = Infinity;
  let samples = 0;
  const loop = (async () => {
    while (running) {
      // A sample the Coordinator did not answer says nothing of what it holds.
      const held = await fetch(`${cluster.coordinatorUrl}/v1/instances`, { signal: AbortSignal.timeout(2000) })
        .then(async (res) => ((await res.json()) as { instances: unknown[] }).instances.length)
        .catch(() => undefined);
      if (held !== undefined) {
        fewest = Math.min(fewest, held);
        samples += 1;
      }
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
  })();
  return {
    stop: async () => {
      running = false;
      await loop;
      return { fewest, samples };
    },
  };
}

describe('a lone controller restarted under load', () => {
  for (const how of ['SIGKILL', 'SIGTERM', 'timing change'] as const) {
    test(`${how}: ${RESTARTS} restarts, no request fails, the Coordinator never holds fewer instances`, async () => {
      const load = new SteadyLoad(cluster, 4, `restart-${how.replace(' ', '-')}`);
      await load.more(20);
      const held = sampleHeld();
      for (let k = 0; k < RESTARTS; k++) {
        await controller.process.stop(how === 'SIGTERM' ? 'SIGTERM' : 'SIGKILL');
        const timing =
          how === 'timing change' ? { ...FAST_TIMING, cluster_synchronization_seconds: 0.2 + 0.1 * ((k % 2) + 1) } : FAST_TIMING;
        controller = await startController(cluster, cluster.engines, timing);
        // The new controller has taken over once its view shows every instance serving.
        await snapshotWhen(cluster, (ids) => ids.length === 4);
        await load.more(10);
      }
      const { fewest, samples } = await held.stop();
      const outcomes = await load.stop();
      console.log(`${how}: ${RESTARTS} restarts, ${outcomes.length} requests, ${samples} samples of the registry, fewest held ${fewest}`);
      expect(fewest).toBe(4);
      const failed = outcomes.filter((o) => o.status !== 200);
      if (failed.length > 0) console.log(failed.slice(0, 3), failed.at(-1));
      expect(failed).toEqual([]);
    }, 120_000);
  }
});
