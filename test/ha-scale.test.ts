/**
 * HA at production shape, on a three-member etcd: fake agents with 8 devices each and 100-character
 * model names, two controllers, two active/active Coordinators. Every state write succeeds, the
 * stored snapshot reads back whole, and a kill -9 of the leader costs no role post and no instance
 * in any Coordinator, sampled all along. CI runs 256 instances (HA_SCALE_INSTANCES); the same test
 * at MindIE's 4096 is `HA_SCALE_INSTANCES=4096 bun test test/ha-scale.test.ts` (HA_SCALE_TTL and
 * HA_SCALE_POLL and HA_SCALE_HEARTBEAT set the lease, the status poll and the heartbeat timeout, in seconds; HA_SCALE_LOG=1 prints the processes' lines; figures in docs/high-availability.md). Before, the whole state was one value per kind: past ~320 instances with 8 devices etcd
 * refused it, and a new leader trusted the copy from bring-up and emptied every Coordinator.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { when } from './support/ha-cluster.ts';
import { HaScale } from './support/ha-scale.ts';

const INSTANCES = Number(process.env['HA_SCALE_INSTANCES'] ?? 256);
const MODEL = 'm'.repeat(100);
const DEADLINE_MS = Math.max(120_000, INSTANCES * 100);

let scale: HaScale;
let leader: number;
const startedAt = Date.now();
beforeAll(async () => {
  scale = await HaScale.start({
    count: INSTANCES,
    devices: 8,
    modelName: MODEL,
    ...(process.env['HA_SCALE_TTL'] === undefined ? {} : { ttlSeconds: Number(process.env['HA_SCALE_TTL']) }),
    ...(process.env['HA_SCALE_POLL'] === undefined ? {} : { pollSeconds: Number(process.env['HA_SCALE_POLL']) }),
    ...(process.env['HA_SCALE_HEARTBEAT'] === undefined ? {} : { heartbeatSeconds: Number(process.env['HA_SCALE_HEARTBEAT']) }),
    // HA_SCALE_LOG=1 prints the processes' lines, with seconds since the start.
    ...(process.env['HA_SCALE_LOG'] === undefined
      ? {}
      : { onLine: (line: string) => console.log(((Date.now() - startedAt) / 1000).toFixed(1), line.slice(0, 400)) }),
  });
  leader = await scale.settled(DEADLINE_MS);
}, DEADLINE_MS + 60_000);
afterAll(async () => {
  await scale?.stop();
});

async function writes(i: number): Promise<{ ok: number; failed: number }> {
  return {
    ok: (await scale.controllerMetric(i, 'pdlink_controller_state_writes_total', 'result="ok"')) ?? -1,
    failed: (await scale.controllerMetric(i, 'pdlink_controller_state_writes_total', 'result="failed"')) ?? -1,
  };
}

describe(`HA with ${INSTANCES} instances of 8 devices on a three-member etcd`, () => {
  test(
    'every state write succeeds, and the stored snapshot reads back whole with its 100-character model names',
    async () => {
      const stored = await scale.storedSettled(DEADLINE_MS);
      expect(stored.state.snapshot!.instances.every((i) => i.model_name === MODEL)).toBe(true);
      expect(stored.file.length).toBe(INSTANCES);
      const w = await writes(leader);
      console.log(
        `${INSTANCES} instances: ${w.ok} state writes, ${await scale.controllerMetric(leader, 'pdlink_controller_state_written_bytes_total')} bytes`,
      );
      expect(w.ok).toBeGreaterThan(0);
      expect(w.failed).toBe(0);
      expect((await writes(1 - leader)).ok).toBe(0);
    },
    DEADLINE_MS,
  );

  test(
    'kill -9 the leader: the other leads, posts no role, and no Coordinator ever holds fewer instances',
    async () => {
      leader = await scale.settled(DEADLINE_MS);
      await scale.storedSettled(DEADLINE_MS);
      const posts = (await scale.agents.counts()).posts;
      const refreshes = await Promise.all([0, 1].map((i) => refreshCount(i)));
      let fewest = Infinity;
      let sampling = true;
      const sampler = (async () => {
        while (sampling) {
          for (const n of await Promise.all([scale.held(0), scale.held(1)])) if (n !== undefined) fewest = Math.min(fewest, n);
          await new Promise((resolve) => setTimeout(resolve, 50));
        }
      })();
      const killedAt = Date.now();
      await scale.controllers[leader]!.stop('SIGKILL');
      await when(async () => (await scale.leader()) === 1 - leader, 'the other controller leads', DEADLINE_MS);
      const ledMs = Date.now() - killedAt;
      // The new leader's snapshots reach both Coordinators.
      await when(
        async () => (await refreshCount(0)) > refreshes[0]! + 3 && (await refreshCount(1)) > refreshes[1]! + 3,
        'the new leader pushes',
        DEADLINE_MS,
      );
      sampling = false;
      await sampler;
      console.log(`${INSTANCES} instances: the other controller led ${ledMs} ms after kill -9; fewest instances held ${fewest}`);
      expect((await scale.agents.counts()).posts).toBe(posts);
      expect(fewest).toBe(INSTANCES);
      expect((await writes(1 - leader)).failed).toBe(0);
      await scale.restartController(leader);
    },
    DEADLINE_MS,
  );
});

/** Refreshes Coordinator `i` accepted so far. */
async function refreshCount(i: number): Promise<number> {
  try {
    const text = await (await fetch(`${scale.coordinators[i]!.urls['management']}/metrics`, { signal: AbortSignal.timeout(5000) })).text();
    return Number(/^pdlink_refresh_total\{outcome="ok"\} (\d+)/m.exec(text)?.[1] ?? 0);
  } catch {
    return 0;
  }
}
