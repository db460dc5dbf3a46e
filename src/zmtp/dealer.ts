/**
 * vLLM's replay request, from a ZeroMQ DEALER: connect to the publisher's ROUTER, send an empty
 * delimiter and the start sequence (8 bytes, big-endian), and read `[delimiter, seq, payload]`
 * replies until the end marker (seq −1, empty payload). Each batch goes to the caller as it arrives;
 * the request is bounded by a deadline and a batch count, and always settles.
 */
import { connect } from 'node:net';
import { ZmtpConnection } from './connection.ts';
import type { TcpEndpoint } from './endpoint.ts';

export interface ReplayOptions {
  readonly endpoint: TcpEndpoint;
  readonly startSeq: bigint;
  readonly maxFrameBytes: number;
  readonly timeoutMs: number;
  /** Most batches taken before the request is given up as incomplete. */
  readonly maxBatches: number;
  /** A buffered batch; `dropped` > 0 when its payload was over the limit and not kept. */
  readonly onBatch: (seq: bigint, payload: Uint8Array, dropped: number) => void;
}

/** How a replay ended: `complete` (the end marker came), or why not. */
export type ReplayEnd = { readonly complete: true } | { readonly complete: false; readonly reason: string };

const END = -1n;

/**
 * Asks for every buffered batch from `startSeq` on.
 * @example const end = await requestReplay({ endpoint, startSeq: 42n, ..., onBatch: (seq, payload) => apply(seq, payload) });
 */
export function requestReplay(options: ReplayOptions): Promise<ReplayEnd> {
  return new Promise((resolve) => {
    let settled = false;
    let count = 0;
    const finish = (end: ReplayEnd): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      conn.close();
      resolve(end);
    };
    const timer = setTimeout(() => finish({ complete: false, reason: `no end marker within ${options.timeoutMs} ms` }), options.timeoutMs);
    const socket = connect({ host: options.endpoint.host, port: options.endpoint.port });
    const conn: ZmtpConnection = new ZmtpConnection(socket, {
      type: 'DEALER',
      peers: ['ROUTER'],
      maxFrameBytes: options.maxFrameBytes,
      onReady: (c) => {
        const seq = new Uint8Array(8);
        new DataView(seq.buffer).setBigInt64(0, options.startSeq);
        c.send([new Uint8Array(0), seq]);
      },
      onMessage: (frames, _conn, dropped) => {
        // [delimiter, seq, payload]; a REQ-style peer may leave the delimiter out.
        const body = frames.length === 3 && frames[0]!.length === 0 ? frames.slice(1) : frames;
        if (body.length !== 2 || body[0]!.length !== 8) {
          finish({ complete: false, reason: `a reply of ${frames.length} frames is not [delimiter, seq, payload]` });
          return;
        }
        const seq = new DataView(body[0]!.buffer, body[0]!.byteOffset, 8).getBigInt64(0);
        if (seq === END) {
          finish({ complete: true });
          return;
        }
        if (++count > options.maxBatches) {
          finish({ complete: false, reason: `more than ${options.maxBatches} batches` });
          return;
        }
        options.onBatch(BigInt.asUintN(64, seq), body[1]!, dropped);
      },
      onClose: (reason) => finish({ complete: false, reason: reason ?? 'closed' }),
    });
  });
}
