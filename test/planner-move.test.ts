/**
 * Moves between roles on a simulated cluster of processes: 2 P + 2 D `pdlink sim-engine` (whose role
 * switch drops the KV cache and refuses requests while it runs), a Coordinator and `pdlink
 * controller`. An operator moves a decode instance to prefill under steady load while a long answer
 * runs on it: the move drains it first (out of the snapshot, what runs on it finishes), then switches
 * it, and no request fails
 * anywhere; a second move asked for meanwhile is refused with 409, and one that would leave a group
 * without a decode instance too.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { SimCluster, until, E2E_DEADLINE_MS } from './support/sim-cluster.ts';
import { snapshotWhen, startController, SteadyLoad, type RunningController } from './support/controller.ts';

let cluster: SimCluster;
let controller: RunningController;

beforeAll(async () => {
  // Decodes of 40 tokens at 5 ms: each D always has some in flight under the load below.
  cluster = await SimCluster.start({ prefill: 2, decode: 2, wire: false, engine: { decodeMsPerToken: 5, roleSwitchMs: 300 } });
  controller = await startController(cluster, cluster.engines);
}, 60_000);

afterAll(async () => {
  await controller?.process.stop();
  await cluster?.stop();
});

interface Leg {
  leg: string;
  outcome: string;
  status: number;
  startedAt: number;
  endedAt: number | null;
}

async function legs(name: string): Promise<Leg[]> {
  const res = await fetch(`${cluster.engine(name).manageUrl}/sim/requests`, { headers: cluster.authorization() });
  return ((await res.json()) as { requests: Leg[] }).requests;
}

async function simStatus(name: string): Promise<{ role: string; role_switches: number }> {
  return (await (await fetch(`${cluster.engine(name).manageUrl}/sim/status`, { headers: cluster.authorization() })).json()) as {
    role: string;
    role_switches: number;
  };
}

const moveRole = (id: number, role: string) =>
  fetch(`${controller.url}/v1/cluster/instances/${id}/role`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ role }),
  });

interface Planner {
  move: { id: number; phase: string } | null;
  history: { id: number; from: string; to: string; outcome: string; started_at: string; ended_at: string }[];
}

async function planner(): Promise<Planner> {
  return ((await (await fetch(`${controller.url}/v1/cluster`)).json()) as { planner: Planner }).planner;
}

async function snapshotRoles(): Promise<string> {
  const view = (await (await fetch(`${cluster.coordinatorUrl}/v1/instances`, { headers: cluster.authorization() })).json()) as {
    peers: { id: number; role: string }[];
  };
  return view.peers
    .map((i) => `${i.id}:${i.role}`)
    .sort()
    .join(' ');
}

describe('a move between roles under load', () => {
  test('drains before it switches: no request fails, the decodes in flight on it finish, then it serves as prefill', async () => {
    await snapshotWhen(cluster, (ids) => ids.length === 4);
    const load = new SteadyLoad(cluster, 8, 'move', 40);
    await load.more(40);
    // A long answer straight from d1's engine: running when the move begins, whatever the load's timing.
    const running = fetch(`${cluster.engine('d1').inferenceUrl}/v1/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: cluster.model, prompt: 'a long answer', max_tokens: 400, stream: true }),
    }).then((r) => r.text());
    await until(
      async () => ((await legs('d1')).some((l) => l.leg === 'local' && l.outcome === 'running') ? true : undefined),
      E2E_DEADLINE_MS,
      () => 'the long answer never started',
    );
    const movedAt = Date.now();
    const res = await moveRole(201, 'prefill');
    expect(res.status).toBe(202);
    // Another move while this one runs: refused, nothing changes.
    const second = await moveRole(100, 'decode');
    expect(second.status).toBe(409);
    expect(((await second.json()) as { error: string }).error).toContain('a move is under way (instance 201 decode → prefill');

    const done = await until(
      async () => {
        const p = await planner();
        return p.move === null && p.history[0]?.id === 201 ? p.history[0] : undefined;
      },
      E2E_DEADLINE_MS,
      () => 'the move of 201 never ended',
    );
    expect(done).toMatchObject({ from: 'decode', to: 'prefill', outcome: 'done' });
    await load.more(40);
    const outcomes = await load.stop();
    expect(outcomes.filter((o) => o.status !== 200)).toEqual([]);
    // What the controller's SLA planner reads of the Coordinator: every request it took on, with the
    // output tokens each asked for.
    const info = (await (
      await fetch(`${cluster.coordinatorUrl}/v1/coordinator_info`, { headers: cluster.authorization() })
    ).json()) as Record<string, number>;
    expect(info['requests_total']).toBe(outcomes.length);
    expect(info['output_tokens_total']).toBe(40 * outcomes.length);
    expect(info['input_tokens_total']).toBeGreaterThan(outcomes.length);

    const d1 = await legs('d1');
    // What was running on it when the move began finished, in the old role: the long answer whole,
    // and every decode leg.
    expect(await running).toContain('data: [DONE]');
    const inFlight = d1.filter((l) => l.startedAt < movedAt && (l.endedAt ?? Infinity) > movedAt);
    expect(inFlight.length).toBeGreaterThan(0);
    expect(inFlight.every((l) => l.outcome === 'ok' && l.status === 200)).toBe(true);
    // Nothing reached it while it switched (a switching engine refuses with 503), nothing failed on it,
    // and nothing was cut by the switch (which ends the legs running when it drops the KV cache).
    expect(d1.filter((l) => l.outcome === 'error' || l.outcome === 'aborted')).toEqual([]);
    // It serves as prefill now.
    expect(d1.some((l) => l.leg === 'prefill' && l.startedAt > Date.parse(done.ended_at) - 1000 && l.outcome === 'ok')).toBe(true);
    expect(await simStatus('d1')).toMatchObject({ role: 'prefill', role_switches: 1 });
    expect(await snapshotRoles()).toBe('100:prefill 101:prefill 200:decode 201:prefill');
  }, 60_000);

  test('a move that would leave the group without a decode instance is refused (409) and changes nothing', async () => {
    const res = await moveRole(200, 'prefill');
    expect(res.status).toBe(409);
    expect(((await res.json()) as { error: string }).error).toContain('below the minimum of 1 (planner.min_decode_per_group)');
    expect((await planner()).move).toBeNull();
    expect(await simStatus('d0')).toMatchObject({ role: 'decode', role_switches: 0 });
  });
});
