import { describe, expect, test } from 'bun:test';
import { FakeAgentCluster, fakeInstance, rounds, BUSY } from '../../test/doubles/controller-agents.ts';
import { Controller } from '../controller/controller.ts';
import { Planner } from '../controller/planner/planner.ts';
import { PLANNER_DEFAULTS } from '../controller/planner/settings.ts';
import { DEFAULT_TIMING } from '../controller/types.ts';
import { controllerRoutes } from './controller.ts';

async function setup(leader = true) {
  const fake = new FakeAgentCluster();
  const instances = [
    fakeInstance(100, '10.0.0.1'),
    fakeInstance(101, '10.0.0.2'),
    fakeInstance(102, '10.0.0.3'),
    fakeInstance(103, '10.0.0.4', 'decode'),
  ];
  const controller = new Controller({ spec: { coordinators: [], timing: DEFAULT_TIMING, rates: { p: 1, d: 1 }, instances }, client: fake });
  await rounds(controller);
  const planner = new Planner({
    settings: { ...PLANNER_DEFAULTS, mode: 'load' },
    port: {
      view: () => controller.view(),
      acting: () => true,
      move: (id, to, request) => controller.move(id, to, request),
      moves: controller.moves,
      coordinators: () => [],
    },
  });
  const app = controllerRoutes({
    controller,
    resolve: () => ({ ok: false, issues: [] }),
    planner: () => planner.view(),
    ...(leader ? {} : { leadership: () => ({ state: 'standby', leader: 'http://10.0.0.9:1030', store: 'etcd', storeConnected: true }) }),
  });
  return { fake, controller, app };
}

const move = (app: Awaited<ReturnType<typeof setup>>['app'], id: string, body: unknown, contentType = 'application/json') =>
  app.request(`/v1/cluster/instances/${id}/role`, {
    method: 'POST',
    headers: { 'content-type': contentType },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });

describe('POST /v1/cluster/instances/{id}/role', () => {
  test('starts a move (202), 409 while it runs, and GET /v1/cluster shows it', async () => {
    const { app, fake, controller } = await setup();
    fake.agent('10.0.0.1').resource = { ...BUSY };
    const res = await move(app, '100', { role: 'decode' });
    expect(res.status).toBe(202);
    expect(await res.json()).toMatchObject({
      id: 100,
      outcome: 'started',
      move: { id: 100, seq: 1, from: 'prefill', to: 'decode', phase: 'draining', by: 'operator', pinned: true, ended_at: null },
    });
    const busy = await move(app, '101', { role: 'prefill' });
    expect(busy.status).toBe(409);
    expect(((await busy.json()) as { error: string }).error).toBe(
      'a move is under way (instance 100 prefill → decode, draining); one move at a time: try again when it is done',
    );
    await rounds(controller);
    const cluster = (await (await app.request('/v1/cluster')).json()) as Record<string, any>;
    expect(cluster.planner).toMatchObject({ mode: 'load', move: { id: 100, phase: 'draining' }, history: [] });
    expect(cluster.planner.settings).toMatchObject({ interval_seconds: 10, cooldown_seconds: 120, margin: 0.2, sla: null });
    expect(cluster.instances.find((i: { id: number }) => i.id === 100)).toMatchObject({
      state: 'moving',
      pinned: 'operator',
      move: { to: 'decode' },
    });
    expect(cluster.instances.find((i: { id: number }) => i.id === 103)).toMatchObject({ pinned: 'file', move: null });
    fake.agent('10.0.0.1').resource.availSlotsNum = 8;
    fake.agent('10.0.0.1').resource.availBlockNum = 64;
    await rounds(controller);
    const after = (await (await app.request('/v1/cluster')).json()) as Record<string, any>;
    expect(after.planner.move).toBeNull();
    expect(after.planner.history[0]).toMatchObject({ id: 100, outcome: 'done', phase: 'done' });
  });

  test('the role it already has: 200, its pin set or cleared; nothing to do: 200 unchanged', async () => {
    const { app } = await setup();
    const pinned = await move(app, '102', { role: 'decode' });
    expect(pinned.status).toBe(200);
    expect(await pinned.json()).toMatchObject({ outcome: 'pinned', move: { pinned: true, from: 'decode', to: 'decode', phase: 'done' } });
    expect(await (await move(app, '102', { role: 'decode', pin: true })).json()).toMatchObject({ outcome: 'unchanged' });
    expect(await (await move(app, '102', { role: 'decode', pin: false })).json()).toMatchObject({
      outcome: 'pinned',
      move: { pinned: false },
    });
  });

  test('bad requests are 400 or 422 naming the field, an unknown instance 404, the minimum 409; nothing changes', async () => {
    const { app, controller } = await setup();
    expect((await move(app, '100', { role: 'decode' }, 'text/plain')).status).toBe(400);
    expect((await move(app, '100', '{"role":')).status).toBe(400);
    expect((await move(app, 'x1', { role: 'decode' })).status).toBe(400);
    const offSpec = await move(app, '100', { role: 'both' });
    expect(offSpec.status).toBe(422);
    expect(((await offSpec.json()) as { issues: { path: string; message: string }[] }).issues).toEqual([
      { path: 'role', message: 'must be "prefill" or "decode"' },
    ]);
    expect((await move(app, '100', { role: 'decode', pin: 'yes' })).status).toBe(422);
    expect((await move(app, '100', { role: 'decode', extra: 1 })).status).toBe(422);
    expect((await move(app, '999', { role: 'decode' })).status).toBe(404);
    // By the 1:1 rates 100 and 101 are prefill, 102 decode; 103 is fixed as decode. Moving 102 leaves 103 alone.
    expect((await move(app, '102', { role: 'prefill' })).status).toBe(202);
    await rounds(controller);
    const minimum = await move(app, '103', { role: 'prefill' });
    expect(minimum.status).toBe(409);
    expect(((await minimum.json()) as { issues: { path: string }[] }).issues[0]!.path).toBe('role');
    expect(controller.moves.current).toBeUndefined();
  });

  test('a standby refuses with 503 naming the leader', async () => {
    const { app, controller } = await setup(false);
    const res = await move(app, '100', { role: 'decode' });
    expect(res.status).toBe(503);
    expect(((await res.json()) as { error: string }).error).toContain('the leader is http://10.0.0.9:1030');
    expect(controller.moves.current).toBeUndefined();
  });
});
