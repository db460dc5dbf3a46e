import { afterEach, describe, expect, test } from 'bun:test';
import { LLM_STATUS, LlmStatusError } from '../core/llm-status.ts';
import * as blocks from './blocks.ts';
import * as rt from './runtime.ts';

const BLOCK = 256;
const open: number[] = [];

afterEach(() => {
  while (open.length > 0) rt.destroy(open.pop()!);
});

function thrown(fn: () => unknown): LlmStatusError {
  try {
    fn();
  } catch (error) {
    if (error instanceof LlmStatusError) return error;
    throw error;
  }
  throw new Error('did not throw');
}

/** Bytes of block b under seed: distinct per block and per seed. */
function pattern(seed: number, b: number): Uint8Array {
  return Uint8Array.from({ length: BLOCK }, (_, i) => (seed * 131 + b * 31 + i * 7) & 0xff);
}

function fill(handle: number, cacheId: bigint, seed: number, count: number): void {
  const data = new Uint8Array(count * BLOCK);
  for (let b = 0; b < count; b++) data.set(pattern(seed, b), b * BLOCK);
  blocks.writeBlocks(
    handle,
    cacheId,
    Array.from({ length: count }, (_, b) => b),
    data,
  );
}

function read(handle: number, cacheId: bigint, block: number): Uint8Array {
  const out = new Uint8Array(BLOCK);
  blocks.readBlocks(handle, cacheId, [block], out);
  return out;
}

describe('local caches', () => {
  test('zero-filled on registration; write and read listed blocks; errors', () => {
    const h = rt.create({ clusterId: 1n, role: 'prompt' });
    open.push(h);
    blocks.registerBlocks(h, 7n, 16, BLOCK);
    expect(read(h, 7n, 15).every((b) => b === 0)).toBe(true);
    const data = new Uint8Array(2 * BLOCK);
    data.set(pattern(1, 0), 0);
    data.set(pattern(1, 1), BLOCK);
    blocks.writeBlocks(h, 7n, new Uint32Array([9, 2]), data);
    expect(read(h, 7n, 9)).toEqual(pattern(1, 0));
    expect(read(h, 7n, 2)).toEqual(pattern(1, 1));

    expect(thrown(() => blocks.registerBlocks(h, 7n, 16, BLOCK)).code).toBe(LLM_STATUS.LLM_PARAM_INVALID);
    expect(thrown(() => blocks.registerBlocks(h, 8n, 0, BLOCK)).message).toContain('numBlocks');
    expect(thrown(() => blocks.writeBlocks(h, 7n, [1], new Uint8Array(BLOCK - 1))).code).toBe(LLM_STATUS.LLM_PARAM_INVALID);
    expect(thrown(() => blocks.readBlocks(h, 7n, [16], new Uint8Array(BLOCK))).code).toBe(LLM_STATUS.LLM_KV_CACHE_NOT_EXIST);
    expect(thrown(() => blocks.readBlocks(h, 9n, [0], new Uint8Array(BLOCK))).code).toBe(LLM_STATUS.LLM_KV_CACHE_NOT_EXIST);
    expect(thrown(() => blocks.readBlocks(h, 7n, [0, -1], new Uint8Array(2 * BLOCK))).message).toContain('blocks[1]');
    blocks.unregisterBlocks(h, 7n);
    expect(thrown(() => blocks.unregisterBlocks(h, 7n)).code).toBe(LLM_STATUS.LLM_KV_CACHE_NOT_EXIST);
  });
});

describe.each([
  ['shared memory', true],
  ['TCP', false],
])('transfers over %s', (_, sameHost) => {
  function pair(): { p: number; d: number } {
    const p = rt.create({ clusterId: 1n, role: 'prompt', listenIp: '127.0.0.2' });
    open.push(p);
    const d = rt.create({ clusterId: 2n, role: 'decoder' });
    open.push(d);
    rt.setOption(d, 'sameHostFastpath', sameHost);
    blocks.registerBlocks(p, 10n, 32, BLOCK);
    blocks.registerBlocks(p, 11n, 32, BLOCK * 2);
    blocks.registerBlocks(d, 20n, 32, BLOCK);
    fill(p, 10n, 1, 32);
    fill(d, 20n, 2, 32);
    expect(rt.link(d, [{ remoteClusterId: 1n, remoteIp: '127.0.0.2', remotePort: rt.listenPort(p) }], 2000).ret).toBe(0);
    expect(rt.listLinks(d)[0]?.sameHost).toBe(sameHost);
    return { p, d };
  }

  test('D pulls non-contiguous blocks of P, then pushes some back; P pulls from D', () => {
    const { p, d } = pair();
    const spec = { remoteClusterId: 1n, remoteCacheId: 10n, localCacheId: 20n, timeoutMs: 2000 };
    blocks.pullBlocks(d, { ...spec, remoteBlocks: [30, 4, 4, 17], localBlocks: new Uint32Array([0, 8, 9, 31]) });
    expect(read(d, 20n, 0)).toEqual(pattern(1, 30));
    expect(read(d, 20n, 8)).toEqual(pattern(1, 4));
    expect(read(d, 20n, 9)).toEqual(pattern(1, 4));
    expect(read(d, 20n, 31)).toEqual(pattern(1, 17));
    expect(read(d, 20n, 1)).toEqual(pattern(2, 1));

    blocks.pushBlocks(d, { ...spec, remoteBlocks: [5], localBlocks: [1] });
    expect(read(p, 10n, 5)).toEqual(pattern(2, 1));

    const server = { remoteClusterId: 2n, remoteCacheId: 20n, localCacheId: 10n, timeoutMs: 2000 };
    blocks.pullBlocks(p, { ...server, remoteBlocks: [2, 3], localBlocks: [12, 13] });
    expect(read(p, 10n, 12)).toEqual(pattern(2, 2));
    expect(read(p, 10n, 13)).toEqual(pattern(2, 3));
  });

  test('unknown caches and blocks, size mismatches and missing links come back as codes', () => {
    const { d } = pair();
    const spec = { remoteClusterId: 1n, remoteCacheId: 10n, localCacheId: 20n, timeoutMs: 2000, remoteBlocks: [0], localBlocks: [0] };
    const code = (over: Partial<blocks.TransferSpec>): number => thrown(() => blocks.pullBlocks(d, { ...spec, ...over })).code;
    expect(code({ remoteCacheId: 99n })).toBe(LLM_STATUS.LLM_KV_CACHE_NOT_EXIST);
    expect(code({ remoteBlocks: [32] })).toBe(LLM_STATUS.LLM_KV_CACHE_NOT_EXIST);
    expect(code({ localCacheId: 99n })).toBe(LLM_STATUS.LLM_KV_CACHE_NOT_EXIST);
    expect(code({ localBlocks: [32] })).toBe(LLM_STATUS.LLM_KV_CACHE_NOT_EXIST);
    expect(code({ remoteCacheId: 11n })).toBe(LLM_STATUS.LLM_PARAM_INVALID);
    expect(code({ remoteClusterId: 3n })).toBe(LLM_STATUS.LLM_NOT_YET_LINK);
    expect(thrown(() => blocks.pullBlocks(d, { ...spec, remoteBlocks: [], localBlocks: [] })).message).toContain('remoteBlocks');
    expect(thrown(() => blocks.pullBlocks(d, { ...spec, localBlocks: [0, 1] })).message).toContain('localBlocks');
    expect(thrown(() => blocks.pullBlocks(d, { ...spec, timeoutMs: 0 })).message).toContain('timeoutMs');
    expect(thrown(() => blocks.pullBlocks(d, { ...spec, remoteBlocks: [0.5] })).message).toContain('remoteBlocks[0]');
  });
});
