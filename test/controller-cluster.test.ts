/**
 * The controller running a simulated cluster as processes: 2 P + 2 D `pdlink sim-engine`, a
 * Coordinator and `pdlink controller` from a topology file, with short timings. The controller
 * alone wires the cluster; these tests then kill and restart engines and the Coordinator, add and
 * drain instances, all under steady client load, and check what clients saw.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { SimCluster, until } from './support/sim-cluster.ts';
import {
  clusterView,
  coordinatorIds,
  snapshotWhen,
  startController,
  SteadyLoad,
  writeTopology,
  type RunningController,
} from './support/controller.ts';

let cluster: SimCluster;
let controller: RunningController;

beforeAll(async () => {
  cluster = await SimCluster.start({ prefill: 2, decode: 2, wire: false, engine: { decodeMsPerToken: 1 } });
  controller = await startController(cluster, cluster.engines);
}, 60_000);

afterAll(async () => {
  const code = await controller?.process.stop();
  await cluster?.stop();
  // A clean SIGTERM exit is part of the contract.
  expect(code).toBe(0);
});

const ids = () => cluster.engines.map((e) => e.id).sort((a, b) => a - b);

describe('pdlink controller on a simulated cluster', () => {
  test('wires 2 P + 2 D from the topology file: every instance serving, requests succeed', async () => {
    await snapshotWhen(cluster, (held) => held.join() === ids().join());
    const view = await clusterView(controller);
    expect(view.instances.map((i) => i.state)).toEqual(['serving', 'serving', 'serving', 'serving']);
    const load = new SteadyLoad(cluster, 2, 'wired');
    await load.more(20);
    // The Controller resends its snapshot every synchronization period, the engines' free slots
    // moving under the load: the Coordinator reads those bodies by its loads template, not parsing them.
    let reads = '';
    await until(
      async () => {
        const text = await (await fetch(`${cluster.coordinatorUrl}/metrics`, { headers: cluster.authorization() })).text();
        reads = text
          .split('\n')
          .filter((l) => l.startsWith('pdlink_refresh_read_total'))
          .join('; ');
        const loads = /pdlink_refresh_read_total\{read="loads"\} (\d+)/.exec(text);
        return loads !== null && Number(loads[1]) > 0 ? true : undefined;
      },
      20_000,
      () => `no refresh read by the loads template: ${reads}`,
    );
    const outcomes = await load.stop();
    expect(outcomes.filter((o) => o.status !== 200)).toEqual([]);
    // Both decoders took requests: the snapshot's peers let the Coordinator use every pair.
    const decodes = await Promise.all(cluster.decodes.map(async (d) => (await cluster.simStatus(d.name)).requests['decode']!));
    expect(decodes.every((n) => n > 0)).toBe(true);
  }, 60_000);

  test('kill -9 a D under load: it leaves the snapshot, no request fails after that; restarted, it serves again', async () => {
    const d1 = cluster.engine('d1');
    const load = new SteadyLoad(cluster, 4, 'kill');
    await load.more(10);
    await d1.process.stop('SIGKILL');
    const leftAt = await snapshotWhen(cluster, (held) => !held.includes(d1.id) && held.length === 3);
    await load.more(30);
    expect(load.failedSince(leftAt)).toEqual([]);

    await cluster.restart('d1', { wire: false });
    await snapshotWhen(cluster, (held) => held.includes(d1.id));
    // The Coordinator decides when it sends requests there again: its circuit for d1 opened when
    // d1 died and may wait out its cool-down (30 s) before a trial.
    await until(
      async () => ((await cluster.simStatus('d1')).requests['decode']! > 0 ? true : undefined),
      45_000,
      () => 'd1 took no request',
    );
    const outcomes = await load.stop();
    expect(outcomes.filter((o) => o.startedAt >= leftAt && o.status !== 200)).toEqual([]);
  }, 90_000);

  test('POST a fifth instance: it gets its role, joins the snapshot and takes requests', async () => {
    const d2 = await cluster.spawnEngine('decode');
    const res = await fetch(`${controller.url}/v1/cluster/instances`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(cluster.topologyEntry(d2)),
    });
    expect(res.status).toBe(201);
    await snapshotWhen(cluster, (held) => held.includes(d2.id));
    const load = new SteadyLoad(cluster, 4, 'scale-out');
    await load.more(40);
    const outcomes = await load.stop();
    expect(outcomes.filter((o) => o.status !== 200)).toEqual([]);
    expect((await cluster.simStatus('d2')).requests['decode']!).toBeGreaterThan(0);
  }, 60_000);

  test('DELETE a P under load: it drains with zero failed requests, then its links are gone', async () => {
    // A P is the hard case: decoders pull its KV blocks after it answered, over the links a
    // removal tears down.
    const p0 = cluster.engine('p0');
    const load = new SteadyLoad(cluster, 6, 'drain');
    await load.more(10);
    const res = await fetch(`${controller.url}/v1/cluster/instances/${p0.id}`, { method: 'DELETE' });
    expect(res.status).toBe(202);
    await snapshotWhen(cluster, (held) => !held.includes(p0.id));
    // Drained and removed: the controller no longer lists it.
    await until(
      async () => ((await clusterView(controller)).instances.some((i) => i.id === p0.id) ? undefined : true),
      20_000,
      () => 'p0 still listed',
    );
    await load.more(20);
    const outcomes = await load.stop();
    expect(outcomes.filter((o) => o.status !== 200)).toEqual([]);
    // Its links were torn down: its agent has no desired peer left, and no decoder lists it.
    const status = (await (await fetch(`${p0.manageUrl}/v1/status`)).json()) as { linkStatus: { desired: number } };
    expect(status.linkStatus.desired).toBe(0);
    for (const d of cluster.decodes.filter((e) => e.process.running())) {
      const peers = ((await (await fetch(`${d.manageUrl}/v1/status`)).json()) as { linkStatus: { peers: { target: string }[] } }).linkStatus
        .peers;
      expect(peers.map((p) => p.target)).not.toContain(p0.ip);
    }
  }, 60_000);

  test('a restarted Coordinator gets the snapshot back', async () => {
    const held = await coordinatorIds(cluster);
    await cluster.restartCoordinator();
    await snapshotWhen(cluster, (now) => now.join() === held.join());
  }, 60_000);

  test('a changed topology file applies as a diff', async () => {
    const d2 = cluster.engine('d2');
    const remaining = cluster.engines.filter((e) => e.name !== 'd0' && e.name !== 'd2');
    writeTopology(cluster, controller.topologyPath, remaining);
    // d2 came through the API, so the file never named it: it stays. d0 is already gone.
    const p1 = cluster.engine('p1');
    writeTopology(
      cluster,
      controller.topologyPath,
      remaining.filter((e) => e !== p1),
    );
    await snapshotWhen(cluster, (now) => !now.includes(p1.id) && now.includes(d2.id));
  }, 60_000);
});
