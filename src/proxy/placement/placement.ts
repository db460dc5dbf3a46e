/**
 * Where a request goes: the scheduler picks a pair, the KV ledger reserves its capacity. The
 * scheduler cannot always know what a prompt needs (a text prompt's token count is an estimate
 * made here, and instances differ in block size), so the ledger may refuse a pair the scheduler
 * picked while another pair has room. The scheduler is then asked again without the instances
 * that were short.
 */
import type { ClusterView } from '../../cluster/instance.ts';
import { errors, PdlinkError } from '../../core/errors.ts';
import type { CompletionKind } from '../../schema/completions.ts';
import type { ProxyOutcome } from '../telemetry/metrics.ts';
import type { PairPicker, PickedPair, PlacementRequest, PromptCapacity, ReservationLedger } from '../exchange/ports.ts';
import { blocksFor, type PromptInfo } from '../exchange/prompt.ts';
import type { LedgerEnd, RequestReservation } from './reservation.ts';
import type { Stop } from '../exchange/stop.ts';

/** Picks per request at most when the ledger keeps refusing: each refusal excludes at least one instance. */
export const MAX_PLACEMENTS = 8;

/**
 * The client's error for a prompt that no instance of a role could ever hold (at its fewest
 * possible tokens: see prompt.ts), or undefined. Such a prompt is refused with 400 before any pair
 * is placed: the cluster being busy (503, retryable) has nothing to do with it.
 * @example const err = promptTooLarge(prompt, 'completions', capacity); if (err) fail(err);
 */
export function promptTooLarge(prompt: PromptInfo, kind: CompletionKind, capacity: PromptCapacity | undefined): PdlinkError | undefined {
  if (capacity === undefined || prompt.fewestTokens === 0) return undefined;
  for (const role of ['decode', 'prefill'] as const) {
    const largest = capacity.largestPrompt(role);
    if (largest === undefined || prompt.fewestTokens <= largest) continue;
    const path = kind === 'chat' ? 'messages' : 'prompt';
    const counted = prompt.estimated
      ? `at least ${prompt.fewestTokens} tokens (estimated from its length)`
      : `${prompt.fewestTokens} tokens`;
    const message = `the prompt is ${counted}; no ${role} instance can hold more than ${largest} (total_block_num × block_size)`;
    return errors.badRequest(message, [{ path, message }]);
  }
  return undefined;
}

/**
 * PromptCapacity read from the cluster's registry: the largest KV cache of each role, worked out
 * again at the first question after a refresh changed anything.
 * @example const capacity = new ClusterCapacity(registry); capacity.largestPrompt('decode')
 */
export class ClusterCapacity implements PromptCapacity {
  readonly #cluster: Pick<ClusterView, 'all' | 'onChange'>;
  #stale = true;
  #prefill: number | undefined;
  #decode: number | undefined;

  constructor(cluster: Pick<ClusterView, 'all' | 'onChange'>) {
    this.#cluster = cluster;
    cluster.onChange(() => {
      this.#stale = true;
    });
  }

  largestPrompt(role: 'prefill' | 'decode'): number | undefined {
    if (this.#stale) {
      this.#stale = false;
      this.#prefill = undefined;
      this.#decode = undefined;
      for (const instance of this.#cluster.all()) {
        const tokens = instance.totalBlocks * instance.blockSize;
        if (instance.role === 'prefill') this.#prefill = Math.max(this.#prefill ?? 0, tokens);
        else if (instance.role === 'decode') this.#decode = Math.max(this.#decode ?? 0, tokens);
      }
    }
    return role === 'prefill' ? this.#prefill : this.#decode;
  }
}

/**
 * The instances of `pair` without room for the request (one slot, the prompt's blocks); both when
 * the ledger cannot tell, so that every refusal excludes something and the picks end.
 * @example shortInstances(pair, prompt.tokenCount, ledger) // [21]: D 21 is full, P 10 has room
 */
export function shortInstances(pair: PickedPair, promptTokens: number, ledger: ReservationLedger): number[] {
  const { p, d } = pair;
  if (p.id === d.id) return [p.id];
  if (ledger.instanceLoad === undefined) return [p.id, d.id];
  const short = [p, d]
    .filter((instance) => {
      const load = ledger.instanceLoad?.(instance.id);
      return load === undefined || load.availSlots < 1 || load.availBlocks < blocksFor(promptTokens, instance.blockSize);
    })
    .map((instance) => instance.id);
  return short.length > 0 ? short : [p.id, d.id];
}

/**
 * `base` plus `more`, without copying when there is nothing to add.
 * @example union(failedP, shortP)
 */
export function union(base: ReadonlySet<number>, more: ReadonlySet<number>): ReadonlySet<number> {
  if (more.size === 0) return base;
  if (base.size === 0) return more;
  return new Set([...base, ...more]);
}

/** What placement sees of its exchange. */
export interface PlacingExchange {
  readonly prompt: PromptInfo;
  readonly deps: { readonly picker: PairPicker; readonly ledger: ReservationLedger };
  fail(outcome: ProxyOutcome, err: PdlinkError, ledgerEnd: LedgerEnd): Stop;
}

/**
 * Picks a pair and reserves its capacity, picking again without the instances the ledger found
 * short; ends the exchange and throws its Stop when no pair can be had. `failedP` are the P
 * instances that failed this request, `last` the failure of the latest attempt.
 * @example const { pair, request } = placePair(exchange, reservation, failedP, last);
 */
export function placePair(
  exchange: PlacingExchange,
  reservation: Pick<RequestReservation, 'take'>,
  failedP: ReadonlySet<number>,
  last: PdlinkError | undefined,
): { pair: PickedPair; request: PlacementRequest } {
  const { prompt } = exchange;
  // Almost every request is placed at the first pick: the sets of short instances are made only
  // when an instance turns out short.
  let shortP: Set<number> | undefined;
  let shortD: Set<number> | undefined;
  const refusals: string[] = [];
  for (let placement = 0; placement < MAX_PLACEMENTS; placement++) {
    const request = placementRequest(prompt, shortP === undefined ? failedP : union(failedP, shortP), shortD ?? NONE);
    const pair = pick(exchange, request, shortP ?? NONE, last, refusals);
    const refused = reserve(exchange, reservation, pair);
    if (refused === undefined) return { pair, request };
    refusals.push(refused.message);
    for (const id of shortInstances(pair, prompt.tokenCount, exchange.deps.ledger)) {
      if (id === pair.p.id) (shortP ??= new Set()).add(id);
      if (id === pair.d.id) (shortD ??= new Set()).add(id);
    }
  }
  throw exchange.fail('unavailable', errors.noPairWithRoom(refusals.join('; ')), { kind: 'none' });
}

function pick(
  exchange: PlacingExchange,
  request: PlacementRequest,
  shortP: ReadonlySet<number>,
  last: PdlinkError | undefined,
  refusals: readonly string[],
): PickedPair {
  const { picker } = exchange.deps;
  let result = picker.pick(request);
  if (!result.ok && request.excludeP.size > shortP.size) {
    // Every P was tried: a transient failure may have passed, so try them again while retries remain.
    const again = picker.pick({ ...request, excludeP: shortP });
    if (again.ok) result = again;
  }
  if (result.ok) return result;
  if (last !== undefined) throw exchange.fail('upstream_failed', last, { kind: 'none' });
  if (refusals.length > 0) throw exchange.fail('unavailable', errors.noPairWithRoom(refusals.join('; ')), { kind: 'none' });
  // Busy, not broken: the client may come back (429), as when the listener is full.
  if (result.reason === 'instance_cap') throw exchange.fail('rejected', errors.instancesAtCap(result.message), { kind: 'none' });
  throw exchange.fail('unavailable', errors.unavailable(result.message), { kind: 'none' });
}

/** Reserves the pair's capacity; returns the ledger's refusal when an instance is short, throws Stop on anything else. */
function reserve(exchange: PlacingExchange, reservation: Pick<RequestReservation, 'take'>, pair: PickedPair): PdlinkError | undefined {
  try {
    reservation.take(pair, exchange.prompt.tokenCount);
    return undefined;
  } catch (err) {
    const known = err instanceof PdlinkError ? err : errors.internal(err);
    if (known.code === 'insufficient_capacity') return known;
    const outcome: ProxyOutcome = known.status === 503 ? 'unavailable' : known.status === 409 ? 'invalid' : 'internal';
    // A refused reservation leaves nothing to end; one taken but not begun is failed.
    throw exchange.fail(outcome, known, { kind: 'fail', code: 'reserve_failed', detail: known.message });
  }
}

/** No instance excluded. */
export const NONE: ReadonlySet<number> = new Set();

/** The scheduler's request for `prompt`, written out rather than spread (this runs for every request). */
function placementRequest(prompt: PromptInfo, excludeP: ReadonlySet<number>, excludeD: ReadonlySet<number>): PlacementRequest {
  const promptTokenCount = prompt.tokenCount;
  if (prompt.tokens !== undefined) return { excludeP, excludeD, promptTokens: prompt.tokens, promptTokenCount };
  if (prompt.text !== undefined) return { excludeP, excludeD, promptText: prompt.text, promptTokenCount };
  return { excludeP, excludeD, promptTokenCount };
}

/**
 * The prompt as the scheduler's request carries it.
 * @example picker.pick({ excludeP, excludeD, ...promptFields(prompt) })
 */
export function promptFields(prompt: PromptInfo): { promptText?: string; promptTokens?: readonly number[]; promptTokenCount: number } {
  const promptTokenCount = prompt.tokenCount;
  if (prompt.tokens !== undefined) return { promptTokens: prompt.tokens, promptTokenCount };
  if (prompt.text !== undefined) return { promptText: prompt.text, promptTokenCount };
  return { promptTokenCount };
}
