/**
 * The shapes admission shares with its caller: what a request brings (who it is, what it needs, how
 * much memory it holds while it waits), what the caller does when it is admitted or refused, and the
 * refusals themselves with their status and `Retry-After`.
 */
import type { FairItem } from './fair-queue.ts';

/** What a request brings to admission. */
export interface AdmissionRequest {
  readonly tenant: string;
  readonly classIndex: number;
  /** The tenant's share of its class. */
  readonly weight: number;
  /** False when D will prefill it itself (conditional disaggregation): it needs room on D only. */
  readonly needsPrefill: boolean;
  /** Bytes its body holds while it waits. */
  readonly bodyBytes: number;
}

/** How a request got in: at once, after waiting, or after cutting a lower class's request. */
export type AdmittedHow = 'immediate' | 'queued';

/** Why a request was refused (or cut). */
export type RefusalReason =
  /** Its class's wait ran out (429; 503 when nothing could serve it). */
  | 'timeout'
  /** The queue was full and nothing of a lower class could make room (429). */
  | 'queue_full'
  /** Waiting, it made room for a request of a higher class when the queue was full (429). */
  | 'shed'
  /** No instance could serve it at all (503). */
  | 'unavailable'
  /** Admitted but not yet answering, it was cut for a higher class (503). */
  | 'preempted';

export interface Refusal {
  readonly reason: RefusalReason;
  readonly status: 429 | 503;
  readonly message: string;
  readonly retryAfterSeconds: number;
}

/** What the caller does for its request. */
export interface TicketHandlers {
  /**
   * Starts the request now, synchronously up to its reservation, so the room it takes is seen at once;
   * its end must call `leave(ticket)` (this ticket, handed here because the start may come before
   * `enter` returns).
   */
  start(how: AdmittedHow, ticket: AdmissionTicket): void;
  /** Answers the refusal (called at most once, and never after start). */
  refuse(refusal: Refusal): void;
  /** Cuts the admitted request if it has sent nothing to its client; true when it did. Absent: never cut. */
  preempt?(): boolean;
}

/** One request's place in admission, from arrival to its end. */
export interface AdmissionTicket extends FairItem, AdmissionRequest {
  /** `new` → (`queued` →) `running` → `done`; or → `done` when refused. */
  state: 'new' | 'queued' | 'running' | 'done';
  /** When it arrived (admission's clock, ms). */
  readonly arrivedAt: number;
  /** When its wait ends, if it waits. */
  deadline: number;
  /** Cleared when the request is over, so a settled ticket holds no body. */
  handlers: TicketHandlers | undefined;
  /** Set when it was cut for a higher class. */
  preempted: boolean;
  /** Running and not yet answering: its neighbours in its class's list of cuttable requests. */
  prev: AdmissionTicket | undefined;
  next: AdmissionTicket | undefined;
  cuttable: boolean;
}

/** The queue and the stages as the dashboard and `GET` callers see them. */
export interface AdmissionSnapshot {
  readonly enabled: boolean;
  readonly inFlight: number;
  readonly queued: number;
  readonly queuedBytes: number;
  readonly classes: readonly {
    readonly name: string;
    readonly queued: number;
    readonly running: number;
    readonly queueTimeoutMs: number;
    /** Waiting requests per tenant, most first. */
    readonly tenants: readonly { readonly tenant: string; readonly queued: number }[];
  }[];
  readonly stages: {
    readonly prefill: { readonly instances: number; readonly room: number; readonly inFlight: number };
    readonly decode: { readonly instances: number; readonly room: number; readonly inFlight: number };
  };
}
