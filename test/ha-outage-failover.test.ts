/**
 * A leader failover across an etcd outage, with a change meanwhile, drops no serving instance from
 * any snapshot: etcd goes away under load, a decoder dies and the leader controller is killed while
 * it is away; when etcd is back the other controller leads from the stored state. Its plan differs
 * from the stored one (the prefill instances' role bodies lose the dead decoder), so before this it
 * counted them as not ready and pushed a snapshot without them, and with them every decoder: the
 * Coordinators emptied and every request got 503 until the bodies were posted again. Now the
 * instances it has not judged yet stand in with their stored entries. Both Coordinators are sampled
 * all along; no request fails once the new leader has pushed.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { HaCluster, HaLoad, when } from './support/ha-cluster.ts';

let ha: HaCluster;
beforeAll(async () => {
  ha = await HaCluster.start({ mode: 'active_active', prefill: 2, decode: 2 });
}, 120_000);
afterAll(async () => {
  await ha?.stop();
});

/** Ids Coordinator `i` holds, undefined when it does not answer. */
async function held(i: number): Promise<number[] | undefined> {
  try {
    const res = await fetch(`${ha.manageUrl(i)}/v1/instances`, { signal: AbortSignal.timeout(2000) });
    return ((await res.json()) as { instances: { id: number }[] }).instances.map((x) => x.id).sort((a, b) => a - b);
  } catch {
    return undefined;
  }
}

describe('leader failover after an etcd outage with a change', () => {
  test('a decoder dies while etcd is away: the new leader never pushes a snapshot without the instances still serving', async () => {
    const first = await ha.leader();
    const all = [100, 101, 200, 201];
    await when(
      async () => JSON.stringify(await held(0)) === JSON.stringify(all) && JSON.stringify(await held(1)) === JSON.stringify(all),
      'both Coordinators hold every instance',
    );
    const load = new HaLoad(ha, 4);
    await load.more(20);
    const generations = [(await ha.generation(0))!, (await ha.generation(1))!];

    await ha.etcd.stop();
    await ha.controllers[first]!.stop('SIGKILL');
    await ha.sim.engine('d1').process.stop('SIGKILL');
    const since = Date.now();
    await when(async () => Date.now() - since >= 3000, 'a few seconds of outage');

    // From here on every snapshot a Coordinator takes must hold the three instances still serving.
    let sampling = true;
    const seen: string[] = [];
    const sampler = (async () => {
      while (sampling) {
        for (const ids of [await held(0), await held(1)]) if (ids !== undefined) seen.push(JSON.stringify(ids));
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
    })();
    await ha.etcd.resume();
    expect(await ha.leader().catch(() => -1)).not.toBe(first);
    await when(
      async () => ((await ha.generation(0)) ?? 0) > generations[0]! + 2 && ((await ha.generation(1)) ?? 0) > generations[1]! + 2,
      'the new leader pushes',
    );
    const pushedAt = Date.now();
    await when(
      async () => JSON.stringify(await held(0)) === '[100,101,200]' && JSON.stringify(await held(1)) === '[100,101,200]',
      'the dead decoder gone',
    );
    await load.more(20);
    sampling = false;
    await sampler;
    const outcomes = await load.stop();
    const distinct = [...new Set(seen)];
    console.log(`outage failover: ${outcomes.length} requests, registries seen ${distinct.join(' ')}`);
    for (const ids of distinct) for (const id of [100, 101, 200]) expect(JSON.parse(ids)).toContain(id);
    expect(outcomes.filter((o) => o.status !== 200 && o.startedAt > pushedAt)).toEqual([]);
  }, 120_000);
});
