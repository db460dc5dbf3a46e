/**
 * One publisher's stream into the KV state: a SUB connection to its PUB endpoint, sequence checks,
 * gap filling through its ROUTER replay endpoint, and the resets that keep the index honest (an
 * engine restart, a gap the replay could not fill, AllBlocksCleared). Live batches that arrive while
 * a replay runs wait, in order and bounded, and are applied after it. Every outcome is counted in
 * `stats`, which the metrics and /dashboard read.
 */
import { decodeBatch, KvDecodeError } from '../kv/events.ts';
import type { BatchCounts, KvState } from '../kv/kv-state.ts';
import { noBatchCounts } from '../kv/kv-state.ts';
import { requestReplay } from '../zmtp/dealer.ts';
import type { TcpEndpoint } from '../zmtp/endpoint.ts';
import { SubSocket } from '../zmtp/sub.ts';
import { SequenceTracker } from './sequence.ts';

export interface SubscriptionLimits {
  /** Largest batch payload read; larger ones are skipped and counted (default 8 MiB). */
  readonly maxBatchBytes: number;
  readonly replayTimeoutMs: number;
  /** Most batches one replay may bring, and most live batches held while it runs. */
  readonly maxReplayBatches: number;
}

/** Why a source's entries were dropped. */
export type ResetReason = 'restart' | 'gap_unfilled' | 'cleared';

export interface SubscriptionStats {
  connected: boolean;
  lastSeq: string | undefined;
  applied: number;
  replayed: number;
  duplicates: number;
  malformed: number;
  oversize: number;
  /** Frames that were not [topic, 8-byte seq, payload]. */
  badFrames: number;
  gaps: number;
  disconnects: number;
  resets: Record<ResetReason, number>;
  blocks: BatchCounts;
  lastError: string | undefined;
}

/** Stands for a payload that was over the limit and not kept. */
const OVERSIZE = new Uint8Array(0);

interface Pending {
  readonly seq: bigint;
  readonly payload: Uint8Array;
}

export class Subscription {
  readonly stats: SubscriptionStats = {
    connected: false,
    lastSeq: undefined,
    applied: 0,
    replayed: 0,
    duplicates: 0,
    malformed: 0,
    oversize: 0,
    badFrames: 0,
    gaps: 0,
    disconnects: 0,
    resets: { restart: 0, gap_unfilled: 0, cleared: 0 },
    blocks: noBatchCounts(),
    lastError: undefined,
  };
  readonly #state: KvState;
  readonly #source: number;
  readonly #replay: TcpEndpoint | undefined;
  readonly #limits: SubscriptionLimits;
  readonly #sub: SubSocket;
  readonly #tracker = new SequenceTracker();
  /** Live batches held while a replay runs; undefined when none runs. */
  #pending: Pending[] | undefined;
  #closed = false;
  /** Settles when the replay now running ends (tests and the intake's close wait for it). */
  replaying: Promise<void> | undefined;

  constructor(state: KvState, source: number, endpoint: TcpEndpoint, replay: TcpEndpoint | undefined, limits: SubscriptionLimits) {
    this.#state = state;
    this.#source = source;
    this.#replay = replay;
    this.#limits = limits;
    this.#sub = new SubSocket({
      endpoint,
      maxFrameBytes: limits.maxBatchBytes,
      onMessage: (frames, dropped) => this.#live(frames, dropped),
      onState: (connected, reason) => {
        this.stats.connected = connected;
        if (!connected) {
          this.stats.disconnects++;
          this.stats.lastError = reason;
        }
      },
    });
  }

  /** Stops listening (the source's entries stay until the source is removed). */
  close(): void {
    this.#closed = true;
    this.#sub.close();
  }

  #live(frames: Uint8Array[], dropped: number): void {
    if (this.#closed) return;
    if (frames.length !== 3 || frames[1]!.length !== 8) {
      this.stats.badFrames++;
      return;
    }
    const seq = new DataView(frames[1]!.buffer, frames[1]!.byteOffset, 8).getBigUint64(0);
    // An oversize payload arrives empty: its number still counts, its contents are skipped.
    const payload = dropped > 0 ? OVERSIZE : frames[2]!;
    if (this.#pending !== undefined) {
      if (this.#pending.length >= this.#limits.maxReplayBatches) this.#pending.shift();
      this.#pending.push({ seq, payload });
      return;
    }
    this.#take(seq, payload);
  }

  /** A live batch in order: applied, or the start of a gap's replay, or a restart. */
  #take(seq: bigint, payload: Uint8Array): void {
    const verdict = this.#tracker.judge(seq, this.#replay !== undefined);
    if (verdict === 'gap') {
      this.stats.gaps++;
      if (this.#replay === undefined) {
        this.#reset('gap_unfilled');
        this.#apply(seq, payload, false);
        return;
      }
      this.#pending = [{ seq, payload }];
      this.replaying = this.#fill(this.#replay, this.#tracker.replayFrom);
      return;
    }
    if (verdict === 'restart') this.#reset('restart');
    this.#apply(seq, payload, false);
  }

  async #fill(replay: TcpEndpoint, from: bigint): Promise<void> {
    let hole = false;
    const end = await requestReplay({
      endpoint: replay,
      startSeq: from,
      maxFrameBytes: this.#limits.maxBatchBytes,
      timeoutMs: this.#limits.replayTimeoutMs,
      maxBatches: this.#limits.maxReplayBatches,
      onBatch: (seq, payload, dropped) => {
        if (hole || this.#closed) return;
        const verdict = this.#tracker.judgeReplayed(seq);
        if (verdict === 'duplicate') this.stats.duplicates++;
        else if (verdict === 'apply') this.#apply(seq, dropped > 0 ? OVERSIZE : payload, true);
        else hole = true;
      },
    });
    if (!end.complete) this.stats.lastError = `replay from ${from}: ${end.reason}`;
    const pending = this.#pending ?? [];
    this.#pending = undefined;
    this.replaying = undefined;
    if (this.#closed) return;
    const first = pending[0];
    // Filled when the replay reached the first live batch held meanwhile.
    if (first !== undefined && (hole || this.#tracker.replayFrom < first.seq)) {
      this.#reset('gap_unfilled');
      this.#tracker.expected = first.seq;
    }
    for (const p of pending) {
      // A held batch may open another gap: those after it wait for that replay.
      const waiting = this.#pending as Pending[] | undefined;
      if (waiting !== undefined) waiting.push(p);
      else if (this.#tracker.expected !== undefined && p.seq < this.#tracker.expected) this.stats.duplicates++;
      else this.#take(p.seq, p.payload);
    }
  }

  #apply(seq: bigint, payload: Uint8Array, replayed: boolean): void {
    this.#tracker.accept(seq);
    this.stats.lastSeq = seq.toString();
    if (payload === OVERSIZE || payload.length > this.#limits.maxBatchBytes) {
      this.stats.oversize++;
      return;
    }
    let batch;
    try {
      batch = decodeBatch(payload);
    } catch (err) {
      if (!(err instanceof KvDecodeError)) throw err;
      this.stats.malformed++;
      this.stats.lastError = `batch ${seq}: ${err.message}`;
      return;
    }
    const before = this.stats.blocks.cleared;
    this.#state.apply(this.#source, batch, this.stats.blocks);
    this.stats.resets.cleared += this.stats.blocks.cleared - before;
    if (replayed) this.stats.replayed++;
    else this.stats.applied++;
  }

  #reset(reason: ResetReason): void {
    this.stats.resets[reason]++;
    this.#state.index.clearSource(this.#source);
    this.#tracker.expected = undefined;
  }
}
