/**
 * What a Controller is built from and what it reports as it runs. Kept apart from the loop so the
 * apps and the HTTP layer that wire a Controller up can name these shapes without reading the loop.
 */
import type { ClientTlsOptions } from '../platform/tls-options.ts';
import type { Outgoing } from './outgoing.ts';
import type { MoveOutcome, MoveView } from './planner/moves.ts';
import type { RefreshBody } from './snapshot.ts';
import type { TopologySpec } from './types.ts';

export interface ControllerEvents {
  rolePost?(ok: boolean): void;
  snapshotPush?(ok: boolean): void;
  /** One evaluation of the whole cluster took this long (ms). */
  evaluated?(ms: number): void;
  /** A snapshot is about to go to the Coordinators (the leader keeps it in the store). */
  composed?(snapshot: RefreshBody, generation: number): void;
  /** A move between roles began, changed phase, ended, or a pin changed (the leader stores it). */
  moved?(move: MoveView): void;
  moveEnded?(move: MoveView, outcome: MoveOutcome, seconds: number): void;
}

export interface ControllerOptions {
  readonly spec: TopologySpec;
  /** Outgoing calls (default: a client with the spec's HTTP timeout). */
  readonly client?: Outgoing;
  /** The default client's TLS (ignored with `client`). */
  readonly clientTls?: ClientTlsOptions;
  readonly now?: () => number;
  readonly events?: ControllerEvents;
  /** One line per notable change (default: none). */
  readonly log?: (line: string) => void;
  /** Whether it acts (posts roles, pushes snapshots) from the start (default true); a standby waits for lead(). */
  readonly leading?: boolean;
  /** Asked before every act while leading: false pauses acting (a leader whose lease is not proven live). */
  readonly mayAct?: () => boolean;
}
