import { describe, expect, test } from 'bun:test';
import { Hono } from 'hono';
import { FakeExecutor } from '../../test/fixtures/links/fake-executor.ts';
import { LinkManager } from '../links/manager.ts';
import { LLM_STATUS as S } from '../core/llm-status.ts';
import { onError, onNotFound } from './envelope.ts';
import { linkRoutes } from './links.ts';

function setup() {
  const executor = new FakeExecutor();
  const manager = new LinkManager({ executor, endpoints: ['0', '1'], batchWindowMs: 0 });
  const app = new Hono();
  app.onError(onError);
  app.notFound(onNotFound);
  app.route('/', linkRoutes({ manager, endpointFor: (local) => (local?.ip === '127.0.0.9' ? '1' : undefined), bodyLimitBytes: 4096 }));
  const post = (path: string, body: unknown, headers: Record<string, string> = { 'content-type': 'application/json' }) =>
    app.request(path, { method: 'POST', headers, body: typeof body === 'string' ? body : JSON.stringify(body) });
  return { app, executor, manager, post };
}

// Response bodies are checked field by field below, so they are read untyped.
const json = (res: Response): Promise<any> => res.json();

const cluster = (id: number | string, address = '127.0.0.2:26000') => ({ remote_cluster_id: id, remote_ip_info: address });

describe('POST /v1/links/link and /v1/links/unlink', () => {
  test('link, link again, unlink, unlink again: codes by cluster', async () => {
    const { post } = setup();
    let res = await post('/v1/links/link', { clusters: [cluster(7)] });
    expect(res.status).toBe(200);
    expect(await json(res)).toEqual({ ret: 0, ret_name: 'LLM_SUCCESS', rets: [{ remote_cluster_id: 7, code: 0, name: 'LLM_SUCCESS' }] });
    res = await post('/v1/links/link', { clusters: [cluster(7)], timeout: 1000 });
    expect(await json(res)).toEqual({
      ret: 4294967295,
      ret_name: 'LLM_FAILED',
      rets: [{ remote_cluster_id: 7, code: S.LLM_ALREADY_LINK, name: 'LLM_ALREADY_LINK' }],
    });
    expect((await json(await post('/v1/links/unlink', { clusters: [cluster(7)] }))).ret).toBe(0);
    const again = await json(await post('/v1/links/unlink', { clusters: [cluster(7)], force: true }));
    expect(again.rets[0].name).toBe('LLM_NOT_YET_LINK');
  });

  test('17 clusters → 200 with CLUSTER_NUM_EXCEED_LIMIT', async () => {
    const { post, executor } = setup();
    const res = await post('/v1/links/link', { clusters: Array.from({ length: 17 }, (_, i) => cluster(i)) });
    expect(res.status).toBe(200);
    const body = await json(res);
    expect(body.ret_name).toBe('LLM_CLUSTER_NUM_EXCEED_LIMIT');
    expect(body.rets).toHaveLength(17);
    expect(executor.batches).toEqual([]);
  });

  test('a mixed batch returns per-cluster codes in input order, big ids exact', async () => {
    const { post, executor } = setup();
    executor.refuse.set(1, S.LLM_LINK_FAILED);
    await post('/v1/links/link', { clusters: [cluster(2)] });
    const body = await json(
      await post('/v1/links/link', {
        clusters: [cluster('18446744073709551615'), cluster(2), cluster(3, '127.0.0.2:1'), cluster(4, '[::1]:26000')],
      }),
    );
    expect(body.rets).toEqual([
      { remote_cluster_id: '18446744073709551615', code: 0, name: 'LLM_SUCCESS' },
      { remote_cluster_id: 2, code: S.LLM_ALREADY_LINK, name: 'LLM_ALREADY_LINK' },
      { remote_cluster_id: 3, code: S.LLM_LINK_FAILED, name: 'LLM_LINK_FAILED' },
      { remote_cluster_id: 4, code: 0, name: 'LLM_SUCCESS' },
    ]);
  });

  test('big ids in JSON numbers stay exact', async () => {
    const { post, executor } = setup();
    await post('/v1/links/link', '{"clusters":[{"remote_cluster_id":9007199254740993,"remote_ip_info":"127.0.0.2:26000"}]}');
    expect(executor.batches[0]?.ids).toEqual([9007199254740993n]);
  });

  test('local_ip_info selects the endpoint', async () => {
    const { post, executor } = setup();
    await post('/v1/links/link', {
      clusters: [
        { ...cluster(1), local_ip_info: '127.0.0.9' },
        { ...cluster(2), local_ip_info: '127.0.0.3:0' },
      ],
    });
    expect(executor.batches.map((b) => `${b.endpoint}:${b.ids.join(',')}`).sort()).toEqual(['0:2', '1:1']);
  });

  test('malformed requests → 400; off-spec bodies → 422 with field paths', async () => {
    const { post } = setup();
    const cases: [unknown, Record<string, string> | undefined, number][] = [
      ['{"clusters":', undefined, 400],
      ['', undefined, 400],
      [{ clusters: [cluster(1)] }, { 'content-type': 'text/plain' }, 400],
      ['x'.repeat(5000), undefined, 413],
    ];
    for (const [body, headers, status] of cases) {
      const res = await post('/v1/links/link', body, headers);
      expect(res.status).toBe(status);
      expect((await json(res)).error_type).toBeString();
    }
    const res = await post('/v1/links/unlink', {
      clusters: [{ remote_cluster_id: -1, remote_ip_info: '127.0.0.2' }],
      timeout: 0,
      force: 1,
    });
    expect(res.status).toBe(422);
    const body = await json(res);
    expect(body.error_type).toBe('UnprocessableEntity');
    expect(body.issues.map((i: { path: string }) => i.path)).toEqual([
      'clusters[0].remote_cluster_id',
      'clusters[0].remote_ip_info',
      'timeout',
      'force',
    ]);
    expect((await post('/v1/links/link', { clusters: [] })).status).toBe(422);
    expect((await post('/v1/links/link', [1])).status).toBe(422);
  });
});

describe('GET /v1/links', () => {
  test('lists client and server links with their state', async () => {
    const { app, post, manager, executor } = setup();
    executor.refuse.set(1, S.LLM_LINK_FAILED);
    await post('/v1/links/link', { clusters: [cluster(7), cluster(8, '127.0.0.2:1')] });
    manager.handleRuntimeEvent('1', { kind: 'peer-linked', side: 'server', remoteClusterId: 9n, code: 0 });
    const body = await json(await app.request('/v1/links'));
    expect(
      body.links.map((l: Record<string, unknown>) => [l.endpoint, l.remote_cluster_id, l.remote_ip_info, l.side, l.state, l.code_name]),
    ).toEqual([
      ['0', 7, '127.0.0.2:26000', 'client', 'linked', 'LLM_SUCCESS'],
      ['0', 8, '127.0.0.2:1', 'client', 'failed', 'LLM_LINK_FAILED'],
      ['1', 9, null, 'server', 'linked', 'LLM_SUCCESS'],
    ]);
    expect(body.links[0].since).toMatch(/^\d{4}-\d\d-\d\dT/);
  });
});
