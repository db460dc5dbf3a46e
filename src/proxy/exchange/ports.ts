/**
 * What the proxy needs from the rest of the Coordinator, as narrow interfaces: the scheduler picks
 * a pair, the KV ledger holds the pair's capacity for the request, the circuit breakers hear how
 * each instance answered. The real modules satisfy them structurally; tests can too.
 */
import type { Instance } from '../../cluster/instance.ts';

/** What the proxy asks the picker for: a pair for this prompt, without the instances that failed it. */
export interface PlacementRequest {
  /** The prompt as text (completions with text prompts, chat), for policies that hash or match it. */
  promptText?: string;
  /** The prompt as token ids, when the client sent them. */
  promptTokens?: readonly number[];
  /** The prompt's length in tokens (counted or estimated), for conditional disaggregation. */
  promptTokenCount?: number;
  /** Prefill instances that already failed this request. */
  excludeP: ReadonlySet<number>;
  excludeD: ReadonlySet<number>;
}

export interface PickedPair {
  readonly ok: true;
  readonly p: Instance;
  readonly d: Instance;
  /** `local`: D prefills the prompt itself, no P leg (conditional disaggregation). */
  readonly path?: 'disaggregated' | 'local';
}

export interface NoPair {
  readonly ok: false;
  /** One sentence naming why, fit for the 503 body. */
  readonly message: string;
  /** The scheduler's reason; `instance_cap` (every candidate at its request cap) is answered 429. */
  readonly reason?: string;
}

/** Chooses a (P, D) pair (src/scheduler/scheduler.ts `PdScheduler`); counts its own selections. */
export interface PairPicker {
  pick(request: PlacementRequest): PickedPair | NoPair;
  /** P prefilled this request (the object given to pick): prefix-aware policies remember it. */
  recordPrefill?(pId: number, request: PlacementRequest): void;
  /** The request took this path (its capacity is held): counted in pdlink_pd_path_total. */
  recordPath?(path: 'disaggregated' | 'local'): void;
  /** Another D linked to P (which already answered), for a D leg that failed before its first byte. */
  pickDecode?(pId: number, request: PlacementRequest): PickedPair | NoPair;
}

/** What the proxy reserves for a request (the ledger's ReserveRequest, src/ledger/types.ts). */
export interface ReserveRequest {
  requestId: string;
  clientRequestId?: string;
  p: number;
  d: number;
  pBlocks: number;
  dBlocks: number;
  leaseMs?: number;
  /** The phase the record starts in, begun with the reservation; without it the record is `reserved`. */
  phase?: 'prefilling' | 'transferring';
}

/** The KV ledger's request-facing calls (see src/ledger/ledger.ts): reserve, move through the phases, end. */
export interface ReservationLedger {
  reserve(request: ReserveRequest): unknown;
  begin(requestId: string, phase: 'prefilling' | 'transferring'): unknown;
  complete(requestId: string, report?: { bytes?: number; blocks?: number }): unknown;
  fail(requestId: string, code: string, detail?: string): unknown;
  release(requestId: string, reason: 'client_abort' | 'cancelled'): unknown;
  extend(requestId: string, ms?: number): unknown;
  /** Moves the decode side of an active reservation to another D (P's side unchanged). */
  moveDecode?(requestId: string, d: number, dBlocks: number): unknown;
  isActive(requestId: string): boolean;
  /** What a new reservation may still take on an instance; tells which side of a refused pair was short. */
  instanceLoad?(id: number): { readonly availSlots: number; readonly availBlocks: number } | undefined;
}

/** The circuit breakers (scheduler/breakers.ts): every answer of an instance is reported; failures open its circuit. */
export interface BreakerReporter {
  recordSuccess(id: number): void;
  recordFailure(id: number): void;
}

/**
 * The largest prompt, in tokens, that any instance of a role could hold in its KV cache
 * (`total_block_num` × `block_size`), or undefined when none of that role is registered.
 */
export interface PromptCapacity {
  largestPrompt(role: 'prefill' | 'decode'): number | undefined;
}
