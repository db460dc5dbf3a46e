/**
 * One request's KV reservation in the ledger, as the proxy drives it: reserved on the chosen pair
 * before P is asked, prefilling during P, transferring once P answered, and ended exactly once —
 * completed when D's answer ended, failed or released on every other path.
 *
 * The record is keyed by an id the proxy made for this request, never by the client's
 * `X-Request-Id`: clients choose theirs freely, and one client reusing (or guessing) another's must
 * not be refused or touch the other's record. The client's id is kept on the record to correlate.
 * A record that ended without the proxy (its instance removed by a refresh, its lease run out) is
 * left alone.
 */
import type { Instance } from '../../cluster/instance.ts';
import { errors } from '../../core/errors.ts';
import type { PickedPair, ReservationLedger, ReserveRequest } from '../exchange/ports.ts';
import type { KvMoved } from '../../core/kv-report.ts';
import { leaseRenewals, type LeaseRenewals, type Renewable } from './lease-renewals.ts';
import { blocksFor } from '../exchange/prompt.ts';

/** How the record ends: `none` when there is nothing (left) to end. */
export type LedgerEnd =
  ({ kind: 'complete' } & KvMoved) | { kind: 'fail'; code: string; detail: string } | { kind: 'release' } | { kind: 'none' };

export class RequestReservation implements Renewable {
  readonly #ledger: ReservationLedger;
  readonly #requestId: string;
  readonly #clientRequestId: string | undefined;
  readonly #leaseMs: number;
  #owned = false;
  /** The renewals this reservation is a member of while its request runs. */
  #renewals: LeaseRenewals | undefined;

  /**
   * `requestId` keys the ledger record; `clientRequestId` is only shown beside it.
   * @example const reservation = new RequestReservation(ledger, transferId, settings.leaseMs, clientRequestId);
   */
  constructor(ledger: ReservationLedger, requestId: string, leaseMs: number, clientRequestId?: string) {
    this.#ledger = ledger;
    this.#requestId = requestId;
    this.#clientRequestId = clientRequestId;
    this.#leaseMs = leaseMs;
  }

  /**
   * Reserves the prompt's blocks on P and D and marks the record prefilling.
   * @throws the ledger's PdlinkError (`insufficient_capacity`, `unavailable` for an instance gone...).
   * @example reservation.take(pair, prompt.tokenCount);
   */
  take(pair: PickedPair, promptTokens: number): void {
    // A request D prefills itself holds nothing on P: the record names D on both sides, P's blocks 0.
    const local = pair.path === 'local';
    const request: ReserveRequest = {
      requestId: this.#requestId,
      p: local ? pair.d.id : pair.p.id,
      d: pair.d.id,
      pBlocks: local ? 0 : blocksFor(promptTokens, pair.p.blockSize),
      dBlocks: blocksFor(promptTokens, pair.d.blockSize),
      leaseMs: this.#leaseMs,
      phase: 'prefilling',
    };
    if (this.#clientRequestId !== undefined) request.clientRequestId = this.#clientRequestId;
    this.#ledger.reserve(request);
    this.#owned = true;
    if (this.#renewals === undefined) {
      // Renewing while the request runs keeps a long request's capacity held; a record the proxy
      // lost track of still expires.
      this.#renewals = leaseRenewals(Math.max(1, Math.floor(this.#leaseMs / 2)));
      this.#renewals.add(this);
    }
  }

  /**
   * P answered: the blocks are now waiting for D.
   * @example reservation.transferring();
   */
  transferring(): void {
    if (!this.#owned) return;
    try {
      if (this.#ledger.isActive(this.#requestId)) this.#ledger.begin(this.#requestId, 'transferring');
    } catch (err) {
      logFailure('advance', err);
    }
  }

  /**
   * Moves the decode side of the record to `d`: the first D failed before answering and P's blocks
   * wait for another one.
   * @throws PdlinkError when the record is no longer this request's (ended, expired, instance
   *   removed) or the ledger refuses `d` (`insufficient_capacity` naming it).
   * @example reservation.moveDecode(next.d, prompt.tokenCount);
   */
  moveDecode(d: Instance, promptTokens: number): void {
    const move = this.#ledger.moveDecode;
    if (!this.#owned || move === undefined || !this.#ledger.isActive(this.#requestId)) {
      throw errors.unavailable(`the KV reservation of request ${this.#requestId} has ended`);
    }
    move.call(this.#ledger, this.#requestId, d.id, blocksFor(promptTokens, d.blockSize));
  }

  /**
   * Ends the record (if it is still ours and active); later calls do nothing.
   * @example reservation.end({ kind: 'release' });
   */
  end(how: LedgerEnd): void {
    if (how.kind === 'none' || !this.#owned) return;
    this.#owned = false;
    const id = this.#requestId;
    const ledger = this.#ledger;
    try {
      if (!ledger.isActive(id)) return;
      if (how.kind === 'complete') ledger.complete(id, movedOf(how));
      else if (how.kind === 'release') ledger.release(id, 'client_abort');
      else ledger.fail(id, how.code, how.detail);
    } catch (err) {
      logFailure('settle', err);
    }
  }

  /**
   * Stops renewing the lease; call when the request is over.
   * @example reservation.close();
   */
  close(): void {
    this.#renewals?.remove(this);
    this.#renewals = undefined;
  }

  /** Extends the record's lease while it is still this request's; the lease renewals call it. */
  renew(): void {
    if (!this.#owned) return;
    try {
      if (this.#ledger.isActive(this.#requestId)) this.#ledger.extend(this.#requestId);
    } catch (err) {
      logFailure('renew the lease of', err);
    }
  }
}

/**
 * A ledger call the request could not make (its record gone under it, a ledger that threw): the
 * request goes on, the operator hears of it.
 */
function logFailure(action: string, err: unknown): void {
  console.error(`pdlink: could not ${action} a KV reservation`, err);
}

/** The bytes and blocks D reported, without the `kind` tag (the ledger takes only what is set). */
function movedOf(how: KvMoved): KvMoved {
  const moved: KvMoved = {};
  if (how.bytes !== undefined) moved.bytes = how.bytes;
  if (how.blocks !== undefined) moved.blocks = how.blocks;
  return moved;
}
