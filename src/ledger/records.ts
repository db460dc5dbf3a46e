/**
 * The transfer record of one request: which P and D it holds capacity on, how far it got, and how
 * it ended. `LiveRecord` is the ledger's mutable copy; `TransferRecord` is the plain data handed out.
 *
 * Lifecycle: reserved → prefilling → transferring → done, where a phase may be skipped forward
 * (reserved → transferring) but never repeated or reversed; any active state may end as failed,
 * expired or released. `done` needs a started phase: a request that never began cannot have moved
 * anything, so complete() on a `reserved` record is an illegal transition.
 */
import type { HeapItem } from '../core/heap.ts';

export const ACTIVE_STATES = ['reserved', 'prefilling', 'transferring'] as const;
export const FINAL_STATES = ['done', 'failed', 'expired', 'released'] as const;

export type ActiveState = (typeof ACTIVE_STATES)[number];
export type FinalState = (typeof FINAL_STATES)[number];
export type TransferState = ActiveState | FinalState;
/** The phases `begin` accepts. */
export type TransferPhase = 'prefilling' | 'transferring';

/** Why a caller ended a reservation without completing or failing it. */
export const RELEASE_REASONS = ['client_abort', 'unlink', 'cancelled', 'shutdown'] as const;
export type ReleaseReason = (typeof RELEASE_REASONS)[number];

/** Code of a record whose lease ran out. */
export const LEASE_EXPIRED = 'lease_expired';
/** Code of a record failed because a refresh removed its P or D. */
export const INSTANCE_REMOVED = 'instance_removed';

/** One transfer record as plain data (a copy: holding it does not pin or change the ledger). */
export interface TransferRecord {
  readonly requestId: string;
  /** The client's id of the request (`X-Request-Id`), when the reserver gave one; many records may share it. */
  readonly clientRequestId: string | null;
  readonly p: number;
  readonly d: number;
  /** Slots held on each of P and D. */
  readonly slots: number;
  readonly pBlocks: number;
  readonly dBlocks: number;
  /**
   * Whether the record holds its D's slot and blocks: false once a refresh removed its D while P's
   * blocks waited for one (the record keeps P's side until moveDecode names another D, or it ends).
   */
  readonly decodeHeld: boolean;
  readonly state: TransferState;
  /** Failure code (failed), release reason (released), `lease_expired` (expired); null otherwise. */
  readonly code: string | null;
  /** Human-readable detail of how the record ended, when there is more to say than the code. */
  readonly detail: string | null;
  /** Bytes and blocks moved, as reported by complete(). */
  readonly bytes: number;
  readonly blocksMoved: number;
  readonly leaseMs: number;
  /** When the lease runs out, in clock milliseconds. */
  readonly deadline: number;
  readonly reservedAt: number;
  readonly prefillingAt: number | null;
  readonly transferringAt: number | null;
  readonly endedAt: number | null;
}

/** The ledger's mutable record; only the ledger touches it. */
export class LiveRecord implements HeapItem {
  state: TransferState = 'reserved';
  code: string | null = null;
  detail: string | null = null;
  bytes = 0;
  blocksMoved = 0;
  prefillingAt: number | null = null;
  transferringAt: number | null = null;
  endedAt: number | null = null;
  heapIndex = -1;
  decodeHeld = true;

  constructor(
    readonly requestId: string,
    readonly p: number,
    /** D and its blocks may change: a D that never got the request, or left the cluster, hands it to another D of P. */
    public d: number,
    readonly slots: number,
    readonly pBlocks: number,
    public dBlocks: number,
    public leaseMs: number,
    public deadline: number,
    readonly reservedAt: number,
    readonly clientRequestId: string | null = null,
  ) {}

  /**
   * Enters `phase` at `now` (the caller checked that it may).
   * @example live.enter('transferring', clock.now());
   */
  enter(phase: TransferPhase, now: number): void {
    this.state = phase;
    if (phase === 'prefilling') this.prefillingAt = now;
    else this.transferringAt = now;
  }

  /**
   * Why the record does not prove that P holds its blocks for a D at `now`, or undefined when it
   * does: P answered (transferring) and P's hold, the lease counted from P's answer (renewals do not
   * stretch it), has not run out. Past it P may have freed them, and a D sent to read them would
   * read another prompt's.
   * @example live.holdRefusal(clock.now()) // 'P has not answered, so no blocks wait for a D'
   */
  holdRefusal(now: number): string | undefined {
    if (this.state !== 'transferring' || this.transferringAt === null) return 'P has not answered, so no blocks wait for a D';
    const held = now - this.transferringAt;
    if (held <= this.leaseMs) return undefined;
    return `P answered ${held} ms ago, beyond its hold of the blocks (the lease, ${this.leaseMs} ms)`;
  }

  /**
   * A plain-data copy of the record.
   * @example const record = live.view(); record.state // 'reserved'
   */
  view(): TransferRecord {
    return {
      requestId: this.requestId,
      clientRequestId: this.clientRequestId,
      p: this.p,
      d: this.d,
      slots: this.slots,
      pBlocks: this.pBlocks,
      dBlocks: this.dBlocks,
      decodeHeld: this.decodeHeld,
      state: this.state,
      code: this.code,
      detail: this.detail,
      bytes: this.bytes,
      blocksMoved: this.blocksMoved,
      leaseMs: this.leaseMs,
      deadline: this.deadline,
      reservedAt: this.reservedAt,
      prefillingAt: this.prefillingAt,
      transferringAt: this.transferringAt,
      endedAt: this.endedAt,
    };
  }
}

/** Order of the active states; a phase may only move to a later one. */
const PHASE_ORDER: Record<ActiveState, number> = { reserved: 0, prefilling: 1, transferring: 2 };

/**
 * Whether an active record may enter `phase` (forward only, never the same phase twice).
 * @example canBegin('reserved', 'transferring') // true
 */
export function canBegin(from: ActiveState, phase: TransferPhase): boolean {
  return PHASE_ORDER[phase] > PHASE_ORDER[from];
}

/**
 * Whether a state is one of the active ones.
 * @example isActive('prefilling') // true
 */
export function isActive(state: TransferState): state is ActiveState {
  return state === 'reserved' || state === 'prefilling' || state === 'transferring';
}
