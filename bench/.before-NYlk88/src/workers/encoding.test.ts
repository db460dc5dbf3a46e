import { describe, expect, test } from 'bun:test';
import { CLUSTER_RECORD_BYTES, decodeClusters, encodeClusters, sharedRets } from './encoding.ts';
import { ENCODINGS, type WorkerCluster } from './protocol.ts';

const clusters: WorkerCluster[] = [
  { id: 0n, ip: '127.0.0.2', port: 26000, localIp: '', localPort: 0 },
  { id: 18446744073709551615n, ip: 'fe80::1234:5678:9abc:def0', port: 65535, localIp: '127.0.0.3', localPort: 1 },
  { id: 9007199254740993n, ip: '::1', port: 1, localIp: '::1', localPort: 65535 },
];

describe('encodeClusters / decodeClusters', () => {
  for (const encoding of ENCODINGS) {
    test(`${encoding}: round-trips ids exactly, addresses and ports`, () => {
      const { batch } = encodeClusters(encoding, clusters);
      expect(decodeClusters(structuredClone(batch))).toEqual(clusters);
    });
  }
  test('shared: pdrt_cluster layout with the codes area after the records', () => {
    const { batch } = encodeClusters('shared', clusters);
    if (batch.enc !== 'shared') throw new Error('unexpected encoding');
    expect(batch.buffer.byteLength).toBe(3 * CLUSTER_RECORD_BYTES + 12);
    const view = new DataView(batch.buffer);
    expect(view.getBigUint64(CLUSTER_RECORD_BYTES, true)).toBe(18446744073709551615n);
    expect(view.getUint16(CLUSTER_RECORD_BYTES + 8, true)).toBe(65535);
    const rets = sharedRets(batch.buffer, 3);
    rets[2] = 7;
    expect(new Int32Array(batch.buffer, 3 * CLUSTER_RECORD_BYTES)[2]).toBe(7);
  });
  test('msgpack: transfers a buffer of its own', () => {
    const a = encodeClusters('msgpack', clusters.slice(0, 1));
    const b = encodeClusters('msgpack', clusters.slice(1));
    expect(a.transfer[0]).not.toBe(b.transfer[0]);
    expect(decodeClusters(a.batch)).toEqual(clusters.slice(0, 1));
  });
});
