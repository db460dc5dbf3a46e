/**
 * A controller failover in the middle of a move between roles, on a real etcd: two `pdlink
 * controller` processes, two Coordinators, 2 P + 2 D simulated engines under load. The leader is
 * killed once while an instance drains for its move (a request running on it directly keeps it busy)
 * and once while an instance switches (a fault makes its switch last); each time the controller that
 * takes over reads the move from the stored state and finishes it. Afterwards every instance has a
 * role and serves, no move is left half done, and no request through the Coordinators failed.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { HaCluster, HaLoad, when } from './support/ha-cluster.ts';
import { until } from './support/sim-cluster.ts';
import { readChunked } from '../src/store/chunked.ts';
import { EtcdStore } from '../src/store/etcd.ts';
import { KEYS } from '../src/store/store.ts';
import { decodeRecords } from '../src/controller/stored-state.ts';

let ha: HaCluster;
let load: HaLoad;
beforeAll(async () => {
  ha = await HaCluster.start({ mode: 'active_active', prefill: 2, decode: 2 });
}, 120_000);
afterAll(async () => {
  await load?.stop();
  await ha?.stop();
});

interface Cluster {
  instances: { id: number; role: string; state: string }[];
  planner: { move: { id: number; phase: string } | null; history: { id: number; to: string; outcome: string }[] };
}

async function cluster(i: number): Promise<Cluster | undefined> {
  try {
    return (await (await fetch(`${ha.controllerUrl(i)}/v1/cluster`, { signal: AbortSignal.timeout(2000) })).json()) as Cluster;
  } catch {
    return undefined;
  }
}

/** The phase of the move of `id` as the stored state says (what a controller that takes over reads). */
async function storedPhase(id: number): Promise<string | undefined> {
  const store = new EtcdStore({ endpoints: ha.etcd.endpoints, cluster: 'ha' });
  try {
    const read = await readChunked(await store.list(KEYS.controllerState), KEYS.controllerState);
    if (!read.ok) return undefined;
    const move = decodeRecords(read.records, read.meta).state.assignments.find((a) => a.id === id)?.move as { phase?: string } | undefined;
    return move?.phase;
  } finally {
    await store.close();
  }
}

async function move(leader: number, id: number, role: string): Promise<number> {
  const res = await fetch(`${ha.controllerUrl(leader)}/v1/cluster/instances/${id}/role`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ role }),
  });
  return res.status;
}

/** Each engine's role as its agent reports it, and whether it is RoleReady. */
async function agentRoles(): Promise<string> {
  const roles = await Promise.all(
    ha.sim.engines.map(async (e) => {
      const status = (await (await fetch(`${e.manageUrl}/v1/status`)).json()) as { service: { currentRole: string; roleStatus: string } };
      return `${e.id}:${status.service.currentRole}/${status.service.roleStatus}`;
    }),
  );
  return roles.join(' ');
}

/** Waits for the leader that is not `old` to have finished the move of `id` to `to`, every instance serving. */
async function finishedBy(old: number, id: number, to: string): Promise<number> {
  const next = old === 0 ? 1 : 0;
  let last: Cluster | undefined;
  await until(
    async () => {
      const view = (last = await cluster(next));
      const done =
        view !== undefined &&
        view.planner.move === null &&
        view.planner.history[0]?.id === id &&
        view.planner.history[0].to === to &&
        view.instances.every((m) => m.state === 'serving');
      return done ? true : undefined;
    },
    30_000,
    () =>
      `controller ${next} did not finish the move of ${id} to ${to}: ${JSON.stringify({ move: last?.planner.move, history: last?.planner.history, instances: last?.instances.map((m) => `${m.id}:${m.role}/${m.state}`) })}`,
  );
  return next;
}

describe('a controller failover in the middle of a move', () => {
  test('killed while the instance drains: the new leader drains on, then switches it; the request running on it finishes', async () => {
    const leader = await ha.leader();
    load = new HaLoad(ha, 4);
    await load.more(20);
    // A long answer straight from p1's engine keeps it busy: the drain must wait for it.
    const p1 = ha.sim.engine('p1');
    const running = fetch(`${p1.inferenceUrl}/v1/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: ha.sim.model, prompt: 'a long answer', max_tokens: 3000, stream: true }),
    }).then((res) => res.text());
    expect(await move(leader, 101, 'decode')).toBe(202);
    await when(async () => (await cluster(leader))?.planner.move?.phase === 'draining', 'the move drains');
    // Killed once the stored state says what move is under way (a leader killed before that leaves no trace of it).
    await when(async () => (await storedPhase(101)) === 'draining', 'the stored state holds the move');
    await ha.controllers[leader]!.stop('SIGKILL');

    const next = await finishedBy(leader, 101, 'decode');
    expect((await cluster(next))!.planner.history[0]).toMatchObject({ id: 101, to: 'decode', outcome: 'done' });
    expect(await running).toContain('data: [DONE]');
    expect(await agentRoles()).toBe('100:prefill/RoleReady 101:decode/RoleReady 200:decode/RoleReady 201:decode/RoleReady');
    await ha.restartController(leader);
  }, 90_000);

  test('killed while the instance switches: the new leader sees it ready in its new role and ends the move', async () => {
    const leader = await ha.leader();
    await ha.sim.faults('d1', { stall_role_switch: { ms: 4000 } });
    expect(await move(leader, 201, 'prefill')).toBe(202);
    await when(async () => (await cluster(leader))?.planner.move?.phase === 'switching', 'the move switches', 30_000);
    await when(async () => (await storedPhase(201)) === 'switching', 'the stored state holds the switch');
    await ha.controllers[leader]!.stop('SIGKILL');

    const next = await finishedBy(leader, 201, 'prefill');
    expect((await cluster(next))!.planner.history[0]).toMatchObject({ id: 201, to: 'prefill', outcome: 'done' });
    expect(await agentRoles()).toBe('100:prefill/RoleReady 101:decode/RoleReady 200:decode/RoleReady 201:prefill/RoleReady');
    await load.more(20);
    const outcomes = await load.stop();
    expect(outcomes.filter((o) => o.status !== 200)).toEqual([]);
  }, 90_000);
});
