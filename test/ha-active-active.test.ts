/**
 * Two controllers and two active/active Coordinators on one real etcd, under steady load: the
 * leader controller killed with SIGKILL, one Coordinator killed, etcd taken away for ten seconds
 * (back, a controller leads again at once and no process reads the store disconnected again).
 * Times are printed, not asserted (bench/failover.bench.ts measures them).
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { HaCluster, HaLoad, when } from './support/ha-cluster.ts';
import { E2E_DEADLINE_MS, until } from './support/sim-cluster.ts';

let ha: HaCluster;
beforeAll(async () => {
  ha = await HaCluster.start({ mode: 'active_active' });
}, 120_000);
afterAll(async () => {
  await ha?.stop();
});

/** Waits until Coordinator i's generation passes `above`. */
function generationPasses(i: number, above: number): Promise<number> {
  let last: number | undefined;
  return until(
    async () => {
      last = await ha.generation(i);
      return last !== undefined && last > above ? last : undefined;
    },
    E2E_DEADLINE_MS,
    () => `Coordinator ${i} generation ${last} not above ${above}`,
  );
}

describe('active/active on etcd', () => {
  test('both Coordinators serve; kill -9 the leader controller: the other leads, re-posts no role in force, generations keep moving', async () => {
    const first = await ha.leader();
    // The leader marks instances serving as it sends the snapshot; each Coordinator is ready once its push lands.
    await when(async () => (await ha.readiness(0)).status === 200 && (await ha.readiness(1)).status === 200, 'both Coordinators ready');
    const load = new HaLoad(ha, 4);
    await load.more(20);
    const posts = await ha.rolePosts();
    expect(posts).toBe(2);
    const before = [(await ha.generation(0))!, (await ha.generation(1))!];
    const killedAt = Date.now();
    await ha.controllers[first]!.stop('SIGKILL');
    const next = await ha.leader();
    const tookOverMs = Date.now() - killedAt;
    expect(next).not.toBe(first);
    await generationPasses(0, before[0]! + 2);
    await generationPasses(1, before[1]! + 2);
    await load.more(20);
    const outcomes = await load.stop();
    console.log(`controller failover: new leader serving ${tookOverMs} ms after kill -9 (lease 2 s)`);
    expect(await ha.rolePosts()).toBe(posts);
    expect(outcomes.filter((o) => o.status !== 200)).toEqual([]);
    await ha.restartController(first);
    await when(async () => (await ha.leadership())[first]?.leader === ha.controllerUrl(next), 'the restarted controller sees the leader');
    expect((await ha.leadership())[first]).toMatchObject({ state: 'standby', store_connected: true });
    // A standby changes nothing and names the leader.
    const removal = await fetch(`${ha.controllerUrl(first)}/v1/cluster/instances/100`, { method: 'DELETE' });
    expect(removal.status).toBe(503);
    expect(await removal.text()).toContain(ha.controllerUrl(next));
    expect(await ha.leader()).toBe(next);
  }, 120_000);

  test('kill -9 one Coordinator under load: only requests in flight on it fail; a restarted one is ready from the stored snapshot at once', async () => {
    const load = new HaLoad(ha, 6);
    await load.more(30);
    const killedAt = Date.now();
    await ha.coordinators[1]!.stop('SIGKILL');
    const diedAt = Date.now();
    await load.more(30);
    const outcomes = await load.stop();
    const failed = outcomes.filter((o) => o.status !== 200);
    // Every failure was on the killed Coordinator and had started before it died.
    for (const f of failed) {
      expect(f.coordinator).toBe(1);
      expect(f.startedAt).toBeLessThanOrEqual(diedAt);
    }
    expect(outcomes.filter((o) => o.startedAt > diedAt && o.status === 200).length).toBeGreaterThan(0);
    console.log(
      `active/active: ${failed.length} of ${outcomes.length} requests failed, all in flight on the killed Coordinator:`,
      failed.map((f) => `started ${f.startedAt - killedAt} ms after the kill, ${f.error}`),
    );

    // Restarted: ready on the snapshot read from etcd, before any push could have reached it.
    await ha.restartCoordinator(1);
    const readiness = await ha.readiness(1);
    const generation = await ha.generation(1);
    expect(readiness.status).toBe(200);
    expect(generation).toBeGreaterThanOrEqual(1);
  }, 120_000);

  test('etcd down ~10 s under load: the leader steps down after its lease, Coordinators keep serving and show disconnected; back: a leader, no role re-posted, generations move', async () => {
    await ha.leader();
    const posts = await ha.rolePosts();
    const load = new HaLoad(ha, 4);
    await load.more(10);
    const stoppedAt = Date.now();
    await ha.etcd.stop();
    await when(
      async () => (await ha.storeConnected(0)) === 0 && (await ha.storeConnected(1)) === 0,
      'both Coordinators report pdlink_store_connected 0',
    );
    const steppedDownAt = await when(
      async () => (await ha.leadership()).every((v) => v === undefined || v.state === 'standby'),
      'the leader controller steps down',
    );
    // Nothing leads, yet both Coordinators answer with the snapshot they hold.
    await when(
      async () => Date.now() - stoppedAt >= 10_000 && load.outcomes.filter((o) => o.startedAt > steppedDownAt).length >= 10,
      'ten seconds of outage with load served',
    );
    const during = [(await ha.generation(0))!, (await ha.generation(1))!];
    await ha.etcd.resume();
    const resumedAt = Date.now();
    await ha.leader();
    const leaderBackMs = Date.now() - resumedAt;
    await when(async () => (await ha.storeConnected(0)) === 1 && (await ha.storeConnected(1)) === 1, 'both Coordinators reconnect');
    // Once back, no process reads disconnected again: the re-election's refused calls (a lapsed
    // lease) are answers, not silence.
    const flaps: string[] = [];
    const watching = (async () => {
      for (const until = Date.now() + 3000; Date.now() < until;) {
        const values = [
          await ha.storeConnected(0),
          await ha.storeConnected(1),
          await ha.storeConnected(0, 'controller'),
          await ha.storeConnected(1, 'controller'),
        ];
        if (values.some((v) => v === 0)) flaps.push(JSON.stringify(values));
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
    })();
    await generationPasses(0, during[0]! + 2);
    await generationPasses(1, during[1]! + 2);
    await watching;
    expect(flaps).toEqual([]);
    const outcomes = await load.stop();
    console.log(
      `etcd outage: leader stepped down ${steppedDownAt - stoppedAt} ms after etcd stopped; a leader again ${leaderBackMs} ms after it restarted`,
    );
    expect(outcomes.filter((o) => o.status !== 200)).toEqual([]);
    expect(await ha.rolePosts()).toBe(posts);
    expect(ha.coordinators.every((c) => c.running()) && ha.controllers.every((c) => c.running())).toBe(true);
  }, 120_000);
});
