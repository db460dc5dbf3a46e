/**
 * The simulated engine's KV events, published as vLLM publishes them: each change of its prefix
 * cache (blocks stored, with their parent and token ids; blocks evicted; the cache cleared) is
 * gathered into one batch per turn of the event loop (vLLM: per scheduler step) and sent on a PUB
 * socket as [topic, 8-byte big-endian sequence, msgpack payload], the sequence starting at 0 with
 * every process; the last batches are kept for the ROUTER replay socket, which answers a start
 * sequence with `[seq, payload]` per batch from there and `[-1, empty]`. Encoding (msgspec's
 * array_like of vLLM's releases, or the newest code's tagged maps) and block hashes (integers or
 * bytes) are chosen, so every bench run exercises the path a real engine's events take.
 */
import { Hono } from 'hono';
import { Packr } from 'msgpackr';
import { PubSocket } from '../../../zmtp/pub.ts';
import { RouterSocket } from '../../../zmtp/router.ts';
import type { PrefixCache, PrefixCacheListener } from './prefix-cache.ts';

export type EventEncoding = 'array' | 'map';
export type EngineHashKind = 'int' | 'bytes';

export interface SimKvEventsOptions {
  /** Address both sockets bind. */
  readonly host: string;
  /** PUB port (0: any free one). */
  readonly port: number;
  /** ROUTER replay port (0: any free one; undefined: no replay socket). */
  readonly replayPort: number | undefined;
  readonly encoding: EventEncoding;
  readonly hashes: EngineHashKind;
  /** `data_parallel_rank` of every batch (vLLM's publisher always sets it; default 0). */
  readonly dpRank?: number;
  /** Batches kept for replay (vLLM's buffer_steps, default 10 000). */
  readonly bufferSteps?: number;
}

type SimEvent =
  | {
      readonly kind: 'stored';
      readonly hashes: readonly unknown[];
      readonly parent: unknown;
      readonly tokens: readonly number[];
      readonly blockSize: number;
    }
  | { readonly kind: 'removed'; readonly hashes: readonly unknown[] }
  | { readonly kind: 'cleared' };

const packr = new Packr({ useRecords: false, variableMapSize: true });
const END_SEQ = Uint8Array.of(0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff);

/**
 * One batch's payload, as vLLM's msgspec encoder writes it.
 * @example encodeBatch([{ kind: 'cleared' }], 1700000000.5, 'array', 0)
 */
export function encodeBatch(events: readonly SimEvent[], ts: number, encoding: EventEncoding, dpRank: number): Uint8Array {
  const wire = events.map((e) => {
    if (encoding === 'array') {
      if (e.kind === 'stored') return ['BlockStored', e.hashes, e.parent, e.tokens, e.blockSize, null, 'GPU', null];
      if (e.kind === 'removed') return ['BlockRemoved', e.hashes, 'GPU'];
      return ['AllBlocksCleared'];
    }
    if (e.kind === 'stored')
      return {
        type: 'BlockStored',
        block_hashes: e.hashes,
        parent_block_hash: e.parent,
        token_ids: e.tokens,
        block_size: e.blockSize,
        lora_id: null,
        medium: 'GPU',
        lora_name: null,
      };
    if (e.kind === 'removed') return { type: 'BlockRemoved', block_hashes: e.hashes, medium: 'GPU' };
    return { type: 'AllBlocksCleared' };
  });
  return packr.pack(encoding === 'array' ? [ts, wire, dpRank] : { ts, events: wire, data_parallel_rank: dpRank });
}

/**
 * The engine's hash of a block (the prefix cache's "hi:lo" hex) as the wire carries it: a 64-bit
 * integer, or 32 bytes.
 * @example engineHash('9e3779b9:7f4a7c15', 'int')
 */
export function engineHash(hash: string, kind: EngineHashKind): unknown {
  const at = hash.indexOf(':');
  const hi = parseInt(hash.slice(0, at), 16) >>> 0;
  const lo = parseInt(hash.slice(at + 1), 16) >>> 0;
  // msgpackr writes a JavaScript number past 2^32 as a float: a BigInt stays a 64-bit integer.
  if (kind === 'int') return hi === 0 ? lo : (BigInt(hi) << 32n) | BigInt(lo);
  const bytes = new Uint8Array(32);
  const view = new DataView(bytes.buffer);
  for (let i = 0; i < 4; i++) {
    view.setUint32(8 * i, (hi ^ Math.imul(i, 0x9e3779b9)) >>> 0);
    view.setUint32(8 * i + 4, (lo ^ Math.imul(i, 0x85ebca6b)) >>> 0);
  }
  return bytes;
}

export class SimKvEvents implements PrefixCacheListener {
  readonly #options: SimKvEventsOptions;
  readonly #pub: PubSocket;
  readonly #replay: RouterSocket | undefined;
  readonly #buffer: { seq: bigint; payload: Uint8Array }[] = [];
  #pending: SimEvent[] = [];
  #scheduled = false;
  #seq = 0n;

  private constructor(options: SimKvEventsOptions, pub: PubSocket, replay: RouterSocket | undefined) {
    this.#options = options;
    this.#pub = pub;
    this.#replay = replay;
  }

  /**
   * Binds the PUB socket (and the ROUTER replay socket when a port is given).
   * @example const events = await SimKvEvents.start({ host: '127.0.0.1', port: 0, replayPort: 0, encoding: 'array', hashes: 'int' });
   */
  static async start(options: SimKvEventsOptions): Promise<SimKvEvents> {
    const pub = await PubSocket.bind({ host: options.host, port: options.port });
    let serve: ((frames: Uint8Array[], reply: (frames: readonly Uint8Array[]) => void) => void) | undefined;
    let replay: RouterSocket | undefined;
    try {
      replay =
        options.replayPort === undefined
          ? undefined
          : await RouterSocket.bind({ host: options.host, port: options.replayPort }, (frames, reply) => serve?.(frames, reply));
    } catch (err) {
      await pub.close();
      throw err;
    }
    const self = new SimKvEvents(options, pub, replay);
    serve = (frames, reply) => self.#serveReplay(frames, reply);
    return self;
  }

  get port(): number {
    return this.#pub.port;
  }

  get replayPort(): number | undefined {
    return this.#replay?.port;
  }

  /** Batches published so far (the next sequence number). */
  get published(): bigint {
    return this.#seq;
  }

  stored(hashes: readonly string[], from: number, to: number, tokens: readonly number[], blockTokens: number): void {
    const kind = this.#options.hashes;
    this.#push({
      kind: 'stored',
      hashes: hashes.slice(from, to).map((h) => engineHash(h, kind)),
      parent: from === 0 ? null : engineHash(hashes[from - 1]!, kind),
      tokens: tokens.slice(from * blockTokens, to * blockTokens),
      blockSize: blockTokens,
    });
  }

  removed(hashes: readonly string[]): void {
    const kind = this.#options.hashes;
    this.#push({ kind: 'removed', hashes: hashes.map((h) => engineHash(h, kind)) });
  }

  cleared(): void {
    this.#push({ kind: 'cleared' });
  }

  /** Sends what is pending now rather than at the end of this turn. */
  flush(): void {
    this.#scheduled = false;
    if (this.#pending.length === 0) return;
    const payload = encodeBatch(this.#pending, Date.now() / 1000, this.#options.encoding, this.#options.dpRank ?? 0);
    this.#pending = [];
    const seq = this.#seq++;
    const seqBytes = new Uint8Array(8);
    new DataView(seqBytes.buffer).setBigUint64(0, seq);
    this.#pub.send([new Uint8Array(0), seqBytes, payload]);
    this.#buffer.push({ seq, payload });
    if (this.#buffer.length > (this.#options.bufferSteps ?? 10_000)) this.#buffer.shift();
  }

  async close(): Promise<void> {
    this.flush();
    await Promise.all([this.#pub.close(), this.#replay?.close()]);
  }

  #push(event: SimEvent): void {
    this.#pending.push(event);
    if (this.#scheduled) return;
    this.#scheduled = true;
    setImmediate(() => this.flush());
  }

  /** vLLM's _service_replay: [delimiter, start seq] → one [delimiter, seq, payload] per kept batch from there, then the end. */
  #serveReplay(frames: Uint8Array[], reply: (frames: readonly Uint8Array[]) => void): void {
    const body = frames.length === 2 && frames[0]!.length === 0 ? frames[1]! : frames.length === 1 ? frames[0]! : undefined;
    if (body === undefined || body.length !== 8) return;
    const start = new DataView(body.buffer, body.byteOffset, 8).getBigUint64(0);
    const empty = new Uint8Array(0);
    for (const { seq, payload } of this.#buffer) {
      if (seq < start) continue;
      const seqBytes = new Uint8Array(8);
      new DataView(seqBytes.buffer).setBigUint64(0, seq);
      reply([empty, seqBytes, payload]);
    }
    reply([empty, END_SEQ, empty]);
  }
}

/**
 * Starts publishing a prefix cache's events when the simulator's options ask for it.
 * @example const events = await publishKvEvents(args, settings.manage.ip, engine.prefixCache);
 */
export async function publishKvEvents(
  args: {
    readonly kvEventsPort?: number;
    readonly kvEventsReplayPort?: number;
    readonly kvEventsEncoding: EventEncoding;
    readonly kvEventsHashes: EngineHashKind;
  },
  host: string,
  cache: PrefixCache,
): Promise<SimKvEvents | undefined> {
  if (args.kvEventsPort === undefined) return undefined;
  const events = await SimKvEvents.start({
    host,
    port: args.kvEventsPort,
    replayPort: args.kvEventsReplayPort,
    encoding: args.kvEventsEncoding,
    hashes: args.kvEventsHashes,
  });
  cache.listener = events;
  return events;
}

/**
 * `POST /sim/prefix_cache/reset`: empties the prefix cache (vLLM's /reset_prefix_cache), which
 * publishes AllBlocksCleared.
 * @example management.route('/', prefixCacheApp(engine.prefixCache));
 */
export function prefixCacheApp(cache: PrefixCache): Hono {
  const app = new Hono();
  app.post('/sim/prefix_cache/reset', (c) => {
    const blocks = cache.stats().blocks;
    cache.clear();
    return c.json({ cleared_blocks: blocks });
  });
  return app;
}
