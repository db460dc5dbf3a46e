/**
 * A generating leg's place in its engine's decode batch: counted while it generates, so each
 * token's time follows the batch size (timing.ts), and uncounted however the answer ends.
 */
import { decodeTokenMs } from '../timing.ts';
import type { LegEngine } from '../types.ts';

export interface BatchSeat {
  /** Milliseconds to the next token at the batch size of this moment. */
  readonly tokenMs: () => number;
  /** Leaves the batch (idempotent). */
  readonly leave: () => void;
}

/**
 * Joins the engine's decode batch for one answer.
 * @example const seat = joinBatch(engine); answer({ ..., tokenMs: seat.tokenMs, onEnd: seat.leave });
 */
export function joinBatch(engine: LegEngine): BatchSeat {
  engine.generating++;
  let left = false;
  const { decodeMsPerToken, decodeBatchSlowdown = 0 } = engine.options;
  return {
    tokenMs: () => decodeTokenMs(decodeMsPerToken, decodeBatchSlowdown, engine.generating),
    leave: () => {
      if (left) return;
      left = true;
      engine.generating--;
    },
  };
}
