import { describe, expect, test } from 'bun:test';
import { encodeClusters } from './encoding.ts';
import { packReply, packTask, unpackReply, unpackTask } from './link-wire.ts';
import type { WorkerCluster } from './protocol.ts';

const clusters: WorkerCluster[] = [
  { id: 18446744073709551615n, ip: '127.0.0.2', port: 26000, localIp: '127.0.0.3', localPort: 0 },
  { id: 7n, ip: '::1', port: 26001, localIp: '', localPort: 41000 },
];
const linkTask = (enc: 'clone' | 'msgpack' | 'shared', list = clusters) => ({
  op: 'unlink' as const,
  handle: 3,
  timeoutMs: 3000,
  deadline: 1_700_000_000_123,
  force: true,
  taskId: 42,
  batch: encodeClusters(enc, list).batch,
});

describe('link wire', () => {
  test('a clone-encoded link or unlink task crosses as primitives and comes back the same', () => {
    for (const list of [clusters, clusters.slice(0, 1), []]) {
      const task = linkTask('clone', list);
      const packed = packTask(task);
      expect(Array.isArray(packed)).toBe(true);
      expect((packed as unknown[]).every((v) => v === null || typeof v !== 'object')).toBe(true);
      expect(unpackTask(structuredClone(packed))).toEqual(task);
    }
    const link = { ...linkTask('clone'), op: 'link' as const, force: false };
    expect(unpackTask(structuredClone(packTask(link)))).toEqual(link);
  });

  test('other tasks and encodings travel as they are', () => {
    for (const task of [linkTask('msgpack'), linkTask('shared'), { op: 'list', handle: 1, taskId: 2 }, { op: 'echo', ms: 0 }]) {
      expect(packTask(task)).toBe(task);
      expect(unpackTask(task)).toBe(task);
    }
  });

  test('a plain link answer crosses as [rc, ...rets]; failures and answers with holders as they are', () => {
    const reply = { ok: true, value: { rc: -1, rets: [0, 12] } } as const;
    expect(packReply(reply)).toEqual([-1, 0, 12]);
    expect(unpackReply(structuredClone(packReply(reply)))).toEqual(reply);
    const shared = { ok: true, value: { rc: 0, rets: [] } } as const;
    expect(unpackReply(packReply(shared))).toEqual(shared);
    const others = [
      { ok: false, code: -1, message: 'worker failed: boom' },
      { ok: true, value: { rc: 0, rets: [0], holders: ['client'] } },
      { ok: true, value: 5 },
      { ok: true, value: null },
      { ok: true, value: [1, 2] },
    ];
    for (const other of others) {
      expect(packReply(other)).toBe(other);
      expect(unpackReply(other)).toBe(other as never);
    }
  });
});
