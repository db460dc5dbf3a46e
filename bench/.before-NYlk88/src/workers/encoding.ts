/**
 * Encodes a link/unlink batch for the trip to a worker: structured clone of plain objects,
 * msgpackr bytes (transferred), or pdrt_cluster records in a SharedArrayBuffer that the worker
 * reads in place and writes the per-cluster codes into.
 */
import { Packr } from 'msgpackr';
import type { EncodedClusters, Encoding, WorkerCluster } from './protocol.ts';

/** sizeof(pdrt_cluster) in native/include/pdrt.h. */
export const CLUSTER_RECORD_BYTES = 144;
const IP_FIELD_BYTES = 64;
const REMOTE_IP_OFFSET = 16;
const LOCAL_IP_OFFSET = 80;

const packr = new Packr({ useRecords: false, int64AsType: 'bigint' });
const utf8 = new TextEncoder();
const utf8Decoder = new TextDecoder();

/**
 * Encodes clusters for a task; the result's transferables go in the task's transfer list.
 * @example const { batch, transfer } = encodeClusters('shared', clusters);
 */
export function encodeClusters(
  encoding: Encoding,
  clusters: readonly WorkerCluster[],
): { batch: EncodedClusters; transfer: ArrayBuffer[] } {
  switch (encoding) {
    case 'clone':
      return { batch: { enc: 'clone', clusters }, transfer: [] };
    case 'msgpack': {
      const packed = packr.pack(clusters.map((c) => [c.id, c.ip, c.port, c.localIp, c.localPort]));
      // Copy into a buffer of its own: msgpackr packs into a shared scratch buffer.
      const own = new Uint8Array(packed);
      return { batch: { enc: 'msgpack', packed: own }, transfer: [own.buffer as ArrayBuffer] };
    }
    case 'shared':
      return { batch: { enc: 'shared', buffer: writeRecords(clusters), n: clusters.length }, transfer: [] };
  }
}

/**
 * Decodes a batch in the worker into plain clusters.
 * @example const clusters = decodeClusters(task.batch);
 */
export function decodeClusters(batch: EncodedClusters): WorkerCluster[] {
  switch (batch.enc) {
    case 'clone':
      return [...batch.clusters];
    case 'msgpack':
      return (packr.unpack(batch.packed) as [bigint | number, string, number, string, number][]).map(
        ([id, ip, port, localIp, localPort]) => ({
          id: BigInt(id),
          ip,
          port,
          localIp,
          localPort,
        }),
      );
    case 'shared':
      return readRecords(batch.buffer, batch.n);
  }
}

/** The per-cluster codes area of a shared batch. */
export function sharedRets(buffer: SharedArrayBuffer, n: number): Int32Array {
  return new Int32Array(buffer, n * CLUSTER_RECORD_BYTES, n);
}

/** pdrt_cluster records as bytes, for a runtime binding that takes them as they are. */
export function sharedRecords(buffer: SharedArrayBuffer, n: number): Uint8Array {
  return new Uint8Array(buffer, 0, n * CLUSTER_RECORD_BYTES);
}

function writeRecords(clusters: readonly WorkerCluster[]): SharedArrayBuffer {
  const n = clusters.length;
  const buffer = new SharedArrayBuffer(n * CLUSTER_RECORD_BYTES + n * 4);
  const view = new DataView(buffer);
  const bytes = new Uint8Array(buffer);
  clusters.forEach((c, i) => {
    const base = i * CLUSTER_RECORD_BYTES;
    view.setBigUint64(base, c.id, true);
    view.setUint16(base + 8, c.port, true);
    view.setUint16(base + 10, c.localPort, true);
    writeIp(bytes, base + REMOTE_IP_OFFSET, c.ip);
    writeIp(bytes, base + LOCAL_IP_OFFSET, c.localIp);
  });
  return buffer;
}

function readRecords(buffer: SharedArrayBuffer, n: number): WorkerCluster[] {
  const view = new DataView(buffer);
  const bytes = new Uint8Array(buffer);
  const out: WorkerCluster[] = [];
  for (let i = 0; i < n; i++) {
    const base = i * CLUSTER_RECORD_BYTES;
    out.push({
      id: view.getBigUint64(base, true),
      port: view.getUint16(base + 8, true),
      localPort: view.getUint16(base + 10, true),
      ip: readIp(bytes, base + REMOTE_IP_OFFSET),
      localIp: readIp(bytes, base + LOCAL_IP_OFFSET),
    });
  }
  return out;
}

function writeIp(bytes: Uint8Array, offset: number, ip: string): void {
  const encoded = utf8.encode(ip);
  // Addresses are validated upstream; the bound keeps the terminating NUL in any case.
  bytes.set(encoded.subarray(0, IP_FIELD_BYTES - 1), offset);
}

function readIp(bytes: Uint8Array, offset: number): string {
  let end = offset;
  while (end < offset + IP_FIELD_BYTES && bytes[end] !== 0) end++;
  // A shared view cannot be decoded directly; copy the few bytes.
  return utf8Decoder.decode(bytes.slice(offset, end));
}
