import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { createInstanceAgent, type InstanceAgent } from '../apps/agent.ts';
import { createRegistry } from '../core/metrics.ts';
import { MAX_BLOCKS_PER_REQUEST } from '../schema/blocks.ts';

let agent: InstanceAgent;

beforeAll(async () => {
  for (let attempt = 0; ; attempt++) {
    const port = 20000 + Math.floor(Math.random() * 30000);
    try {
      agent = await createInstanceAgent({
        devices: [{ endpoint: '0', ip: '127.0.0.6', port, clusterId: 6n }],
        threads: 1,
        metrics: createRegistry(),
        transfers: { threads: 1 },
      });
      break;
    } catch (err) {
      if (attempt > 5 || !/cannot open link endpoint/.test(String(err))) throw err;
    }
  }
});

afterAll(() => agent?.close());

const json = (body: unknown) => ({
  method: 'POST',
  headers: { 'content-type': 'application/json' },
  body: typeof body === 'string' ? body : JSON.stringify(body),
});
async function post(path: string, body: unknown): Promise<{ status: number; body: any }> {
  const res = await agent.managementApp.request(path, json(body));
  return { status: res.status, body: await res.json() };
}
const paths = (body: { issues?: { path: string }[] }) => (body.issues ?? []).map((i) => i.path);

const pull = { remote_cluster_id: 1, remote_cache_id: 1, src_blocks: [3, 1], dst_cache_id: 10, dst_blocks: [0, 5] };

describe('/v1/kv/caches, write, read', () => {
  test('register, list, write and read back, unregister', async () => {
    expect(await post('/v1/kv/caches', { cache_id: 10, num_blocks: 8, block_bytes: 4 })).toEqual({
      status: 200,
      body: { ret: 0, ret_name: 'LLM_SUCCESS', cache_id: 10, num_blocks: 8, block_bytes: 4 },
    });
    const again = await post('/v1/kv/caches', { cache_id: '10', num_blocks: 8, block_bytes: 4, local_ip_info: '127.0.0.6' });
    expect(again.body).toMatchObject({ ret: 0x5010b005, ret_name: 'LLM_PARAM_INVALID' });
    const list = await (await agent.managementApp.request('/v1/kv/caches')).json();
    expect(list).toEqual({ caches: [{ endpoint: '0', cache_id: 10, num_blocks: 8, block_bytes: 4 }] });

    const data = Buffer.from([1, 2, 3, 4, 5, 6, 7, 8]).toString('base64');
    expect((await post('/v1/kv/write', { cache_id: 10, blocks: [7, 2], data })).body).toEqual({ ret: 0, ret_name: 'LLM_SUCCESS' });
    const read = await post('/v1/kv/read', { cache_id: 10, blocks: [2, 7, 0] });
    expect(read.body).toEqual({
      ret: 0,
      ret_name: 'LLM_SUCCESS',
      data: Buffer.from([5, 6, 7, 8, 1, 2, 3, 4, 0, 0, 0, 0]).toString('base64'),
    });
    expect((await post('/v1/kv/read', { cache_id: 10, blocks: [8] })).body).toMatchObject({ ret_name: 'LLM_KV_CACHE_NOT_EXIST' });
    expect((await post('/v1/kv/read', { cache_id: 11, blocks: [0] })).body).toMatchObject({ ret_name: 'LLM_KV_CACHE_NOT_EXIST' });

    expect((await post('/v1/kv/caches', { cache_id: 12, num_blocks: 1, block_bytes: 1 })).body.ret).toBe(0);
    const del = await agent.managementApp.request('/v1/kv/caches/12?local_ip_info=127.0.0.6', { method: 'DELETE' });
    expect(await del.json()).toEqual({ ret: 0, ret_name: 'LLM_SUCCESS' });
    expect(await (await agent.managementApp.request('/v1/kv/caches/12', { method: 'DELETE' })).json()).toMatchObject({
      ret_name: 'LLM_KV_CACHE_NOT_EXIST',
    });
  });

  test('write and read refusals name the field', async () => {
    const short = await post('/v1/kv/write', { cache_id: 10, blocks: [1], data: Buffer.from([1, 2, 3]).toString('base64') });
    expect(short.status).toBe(422);
    expect(short.body.issues).toEqual([{ path: 'data', message: 'must hold 1 × 4 = 4 bytes, got 3' }]);
    const notBase64 = await post('/v1/kv/write', { cache_id: 10, blocks: [1], data: 'AAA$' });
    expect(paths(notBase64.body)).toEqual(['data']);
    expect(paths((await post('/v1/kv/write', { cache_id: 10, blocks: [1], data: 'AAA' })).body)).toEqual(['data']);
    expect(paths((await post('/v1/kv/read', { cache_id: -1, blocks: [] })).body)).toEqual(['cache_id', 'blocks']);
    expect((await post('/v1/kv/caches', { cache_id: 13, num_blocks: 0, block_bytes: 2 ** 32, local_ip_info: 'nope' })).body.issues).toEqual(
      [
        { path: 'num_blocks', message: 'must be > 0' },
        { path: 'block_bytes', message: 'must be at most 4294967295' },
        { path: 'local_ip_info', message: expect.stringContaining('IP address') },
      ],
    );
    const elsewhere = await post('/v1/kv/caches', { cache_id: 13, num_blocks: 1, block_bytes: 1, local_ip_info: '127.0.0.9' });
    expect(elsewhere.body.issues).toEqual([{ path: 'local_ip_info', message: 'no local device has the address 127.0.0.9' }]);
    const bigRead = await post('/v1/kv/caches', { cache_id: 14, num_blocks: 2, block_bytes: 16 * 1024 * 1024 });
    expect(bigRead.body.ret).toBe(0);
    expect(paths((await post('/v1/kv/read', { cache_id: 14, blocks: [0, 1] })).body)).toEqual(['blocks']);
    expect((await agent.managementApp.request('/v1/kv/caches/x1', { method: 'DELETE' })).status).toBe(422);
    expect((await agent.managementApp.request('/v1/kv/caches/1?local_ip_info=bad', { method: 'DELETE' })).status).toBe(422);
  });
});

describe('/v1/kv/pull and /v1/kv/push', () => {
  test('a runtime refusal is a 200 with the code', async () => {
    expect(await post('/v1/kv/pull', pull)).toEqual({
      status: 200,
      body: { ret: 0x5010b007, ret_name: 'LLM_NOT_YET_LINK', bytes: 0, blocks: 0, message: expect.stringContaining('NOT_YET_LINK') },
    });
    const push = await post('/v1/kv/push', {
      remote_cluster_id: 1,
      src_cache_id: 10,
      src_blocks: [0],
      remote_cache_id: 1,
      dst_blocks: [0],
      timeout: 500,
    });
    expect(push.body).toMatchObject({ ret_name: 'LLM_NOT_YET_LINK', bytes: 0 });
    // An unknown local cache fails before the runtime is asked.
    expect((await post('/v1/kv/pull', { ...pull, dst_cache_id: 99 })).body).toMatchObject({ ret_name: 'LLM_KV_CACHE_NOT_EXIST' });
  });

  test('off-spec bodies are 422 with every field path', async () => {
    const res = await post('/v1/kv/pull', {
      remote_cluster_id: 2 ** 64,
      remote_cache_id: 'x',
      src_blocks: [0, -1, 1.5, '2', 2 ** 32],
      dst_cache_id: 1,
      dst_blocks: 'all',
      timeout: 0,
    });
    expect(res.status).toBe(422);
    expect(res.body.error_type).toBe('UnprocessableEntity');
    expect(paths(res.body)).toEqual([
      'remote_cluster_id',
      'remote_cache_id',
      'src_blocks[1]',
      'src_blocks[2]',
      'src_blocks[3]',
      'src_blocks[4]',
      'dst_blocks',
      'timeout',
    ]);
    const uneven = await post('/v1/kv/pull', { ...pull, dst_blocks: [0] });
    expect(uneven.body.issues).toEqual([{ path: 'dst_blocks', message: 'must list as many blocks as src_blocks (2), got 1' }]);
    expect(paths((await post('/v1/kv/pull', { ...pull, timeout: 2 ** 31 })).body)).toEqual(['timeout']);
    expect(paths((await post('/v1/kv/pull', { ...pull, timeout: 1.5 })).body)).toEqual(['timeout']);
    expect(paths((await post('/v1/kv/pull', { ...pull, src_blocks: [], dst_blocks: [] })).body)).toEqual(['src_blocks', 'dst_blocks']);
    expect(paths((await post('/v1/kv/pull', { remote_cache_id: 1 })).body)).toEqual([
      'remote_cluster_id',
      'src_blocks',
      'dst_cache_id',
      'dst_blocks',
    ]);
    expect(
      paths(
        (await post('/v1/kv/push', { remote_cluster_id: 1, src_cache_id: 1, src_blocks: [0], remote_cache_id: 1, dst_blocks: [0, 1] }))
          .body,
      ),
    ).toEqual(['dst_blocks']);
    expect((await post('/v1/kv/pull', [pull])).status).toBe(422);
  });

  test('a list of a million bad indices is refused with its first few paths', async () => {
    const many = new Array(MAX_BLOCKS_PER_REQUEST).fill(-1);
    const res = await post('/v1/kv/pull', { ...pull, src_blocks: many, dst_blocks: many });
    expect(res.status).toBe(422);
    expect(res.body.issues).toHaveLength(20);
    expect(paths((await post('/v1/kv/pull', { ...pull, src_blocks: [...many, 0], dst_blocks: [0] })).body)).toEqual(['src_blocks']);
  });

  test('malformed requests are 400', async () => {
    expect((await post('/v1/kv/pull', '{"remote_cluster_id": ')).status).toBe(400);
    expect((await post('/v1/kv/pull', '')).status).toBe(400);
    const text = await agent.managementApp.request('/v1/kv/pull', {
      method: 'POST',
      headers: { 'content-type': 'text/plain' },
      body: '{}',
    });
    expect(text.status).toBe(400);
  });

  test('GET /v1/kv/transfers and /v1/kv/links list nothing when idle', async () => {
    expect(await (await agent.managementApp.request('/v1/kv/transfers')).json()).toEqual({ transfers: [] });
    expect(await (await agent.managementApp.request('/v1/kv/links')).json()).toEqual({ links: [] });
  });
});
