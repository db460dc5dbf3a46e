/**
 * What an event batch's sequence number means for a stream, as a pure rule: the next one is applied;
 * one further on is a gap (ask the replay socket for what was missed); one that goes back means the
 * engine restarted (its entries are dropped and the stream starts over). The first batch a stream
 * sees is a gap from 0 when a replay socket can say what came before, else where the stream starts.
 */

export type SequenceVerdict = 'apply' | 'gap' | 'restart' | 'duplicate';

export class SequenceTracker {
  /** The sequence number the next batch should carry; undefined before the first. */
  expected: bigint | undefined;

  /**
   * The verdict on a live batch's number (the tracker moves on only when told by accept()).
   * @example if (tracker.judge(seq, true) === 'apply') { apply(payload); tracker.accept(seq); }
   */
  judge(seq: bigint, canReplay: boolean): SequenceVerdict {
    const expected = this.expected;
    if (expected === undefined) return seq > 0n && canReplay ? 'gap' : 'apply';
    if (seq === expected) return 'apply';
    if (seq > expected) return 'gap';
    return 'restart';
  }

  /** The verdict on a replayed batch: only the next one is taken, earlier ones are duplicates. */
  judgeReplayed(seq: bigint): SequenceVerdict {
    const expected = this.expected ?? 0n;
    if (seq === expected) return 'apply';
    return seq < expected ? 'duplicate' : 'gap';
  }

  /** Where a replay should start: the next expected number (0 before any). */
  get replayFrom(): bigint {
    return this.expected ?? 0n;
  }

  /** The batch `seq` was taken (applied, or skipped as unreadable): the next is seq + 1. */
  accept(seq: bigint): void {
    this.expected = seq + 1n;
  }
}
