/**
 * A D leg that provably never reached D (its connection was refused) has not touched P's KV
 * blocks, and P holds them still: another D linked to the same P (same group, lists P among its
 * peers) takes the leg with P's `kv_transfer_params` as they are, once the ledger has moved the
 * request's reservation to it. The ledger is the proof that P still holds them: it moves only a
 * record that is still active, in the transferring phase, within P's hold (the lease since P
 * answered), and extends its lease (KvLedger.moveDecode). A leg that may have reached D (a 5xx, a
 * connection lost after the request went out) is never sent elsewhere: D may have pulled the
 * blocks and told P to free them, and another D reading freed blocks would decode from a cache
 * that is no longer this prompt's. A 4xx is the client's answer, never retried.
 */
import { PdlinkError } from '../../core/errors.ts';
import { MAX_PLACEMENTS, NONE, promptFields, union } from '../placement/placement.ts';
import type { PairPicker, PickedPair } from '../exchange/ports.ts';
import type { PromptInfo } from '../exchange/prompt.ts';

/**
 * Chooses another D of `pair`'s P, none of `failedD`, and moves the reservation to it with
 * `move`; a D the ledger finds short is passed over. Undefined when there is none to be had.
 * @example const next = nextDecode(picker, pair, failedD, prompt, (d) => reservation.moveDecode(d, prompt.tokenCount));
 */
export function nextDecode(
  picker: PairPicker,
  pair: PickedPair,
  failedD: ReadonlySet<number>,
  prompt: PromptInfo,
  move: (d: PickedPair['d']) => void,
): PickedPair | undefined {
  if (picker.pickDecode === undefined) return undefined;
  const short = new Set<number>();
  for (let placement = 0; placement < MAX_PLACEMENTS; placement++) {
    const result = picker.pickDecode(pair.p.id, { excludeP: NONE, excludeD: union(failedD, short), ...promptFields(prompt) });
    if (!result.ok) return undefined;
    try {
      move(result.d);
      return result;
    } catch (err) {
      // Only a D without room is worth passing over; anything else (the record ended) ends the retry.
      if (!(err instanceof PdlinkError) || err.code !== 'insufficient_capacity') return undefined;
      short.add(result.d.id);
    }
  }
  return undefined;
}
