/**
 * Two controllers and two Coordinators in MindIE's master/standby (backup_config.function_enable)
 * on one real etcd: one master ready, the standby 503 "not master" (and proxying what reaches it,
 * by design); the leader controller and the master Coordinator killed with SIGKILL; etcd taken away. Times are printed, not asserted
 * (bench/failover.bench.ts measures them).
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { HaCluster, HaLoad, when } from './support/ha-cluster.ts';

let ha: HaCluster;
beforeAll(async () => {
  ha = await HaCluster.start({ mode: 'master_standby' });
}, 120_000);
afterAll(async () => {
  await ha?.stop();
});

/** Index of the one ready Coordinator, once exactly one is ready and the other says "not master". */
async function master(): Promise<number> {
  let found = -1;
  await when(async () => {
    const r = [await ha.readiness(0), await ha.readiness(1)];
    const ready = r.flatMap((x, i) => (x.status === 200 ? [i] : []));
    if (ready.length !== 1) return false;
    const other = r[1 - ready[0]!]!;
    if (other.status !== 503 || !other.text.includes('not master')) return false;
    found = ready[0]!;
    return true;
  }, 'exactly one master Coordinator');
  return found;
}

describe('master/standby on etcd', () => {
  test('one master is ready, the standby answers 503 "not master" yet holds the snapshot; kill -9 the leader controller: no role re-posted, generations keep moving', async () => {
    const first = await ha.leader();
    const m = await master();
    const standby = 1 - m;
    await when(async () => ((await ha.generation(standby)) ?? 0) > 0, 'the standby holds a snapshot');
    const load = new HaLoad(ha, 4, [m, standby], false);
    await load.more(20);
    const posts = await ha.rolePosts();
    const before = [(await ha.generation(0))!, (await ha.generation(1))!];
    await ha.controllers[first]!.stop('SIGKILL');
    expect(await ha.leader()).toBe(1 - first);
    await when(
      async () => ((await ha.generation(0)) ?? 0) > before[0]! + 2 && ((await ha.generation(1)) ?? 0) > before[1]! + 2,
      'generations move',
    );
    await load.more(20);
    const outcomes = await load.stop();
    expect(outcomes.filter((o) => o.status !== 200)).toEqual([]);
    expect(await ha.rolePosts()).toBe(posts);
    expect(await master()).toBe(m);
    await ha.restartController(first);
  }, 120_000);

  test('a standby proxies the requests that reach it (by design): 200 while its readiness says "not master"', async () => {
    const m = await master();
    const standby = 1 - m;
    await when(async () => ((await ha.generation(standby)) ?? 0) > 0, 'the standby holds a snapshot');
    // Only the standby is asked: clients a load balancer has not moved yet, or that call it directly.
    const load = new HaLoad(ha, 2, [standby], false);
    await load.more(20);
    const outcomes = await load.stop();
    expect(outcomes.every((o) => o.coordinator === standby)).toBe(true);
    expect(outcomes.filter((o) => o.status !== 200)).toEqual([]);
    const readiness = await ha.readiness(standby);
    expect(readiness.status).toBe(503);
    expect(readiness.text).toContain('not master');
  }, 120_000);

  test('kill -9 the master Coordinator: the standby becomes ready when the lock lapses; the restarted one stands by', async () => {
    const m = await master();
    const standby = 1 - m;
    const load = new HaLoad(ha, 4, [m, standby], false);
    await load.more(20);
    const killedAt = Date.now();
    await ha.coordinators[m]!.stop('SIGKILL');
    const diedAt = Date.now();
    const readyAt = await when(async () => (await ha.readiness(standby)).status === 200, 'the standby becomes master');
    await load.more(20);
    const outcomes = await load.stop();
    console.log(`master/standby: standby ready ${readyAt - killedAt} ms after kill -9 of the master (lease 2 s; MindIE: up to 10 s)`);
    for (const f of outcomes.filter((o) => o.status !== 200)) {
      expect(f.coordinator).toBe(m);
      expect(f.startedAt).toBeLessThanOrEqual(diedAt);
    }
    await ha.restartCoordinator(m);
    expect(await master()).toBe(standby);
    await when(async () => (await ha.readiness(m)).text.includes(ha.manageUrl(standby)), 'the restarted one names the master');
  }, 120_000);

  test('etcd down ~10 s: the master stays ready and the standby stays a standby; back: still one master, store connected again', async () => {
    const m = await master();
    await ha.leader();
    const load = new HaLoad(ha, 2, [m, 1 - m], false);
    await load.more(10);
    const stoppedAt = Date.now();
    await ha.etcd.stop();
    await when(
      async () => (await ha.storeConnected(0)) === 0 && (await ha.storeConnected(1)) === 0,
      'Coordinators report pdlink_store_connected 0',
    );
    await when(async () => Date.now() - stoppedAt >= 10_000, 'ten seconds of outage');
    expect((await ha.readiness(m)).status).toBe(200);
    expect((await ha.readiness(1 - m)).status).toBe(503);
    await ha.etcd.resume();
    await when(async () => (await ha.storeConnected(0)) === 1 && (await ha.storeConnected(1)) === 1, 'Coordinators reconnect');
    await ha.leader();
    expect(await master()).toBe(m);
    const outcomes = await load.stop();
    expect(outcomes.filter((o) => o.status !== 200)).toEqual([]);
  }, 120_000);
});
