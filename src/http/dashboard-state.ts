/**
 * The one message the topology page receives, over SSE and from `GET /dashboard/state`: the P/D
 * graph with each link's state, per-instance load and health, rates over the last minutes and the
 * latest failed requests. The Coordinator and the controller fill it from their own objects; the
 * page (ui/) reads only this shape, so both servers share one page.
 */

export type DashboardLinkState = 'ok' | 'linking' | 'failed';

export interface DashboardInstance {
  readonly id: number;
  readonly role: string;
  readonly group: number;
  /** Inference address, `ip:port`. */
  readonly address: string;
  /** The controller's state of the instance (serving, down, ...); the Coordinator says `registered`. */
  readonly state: string;
  /** Free and total; null when unknown (an agent that does not report its resources). */
  readonly slots: { readonly free: number; readonly total: number } | null;
  readonly blocks: { readonly free: number; readonly total: number } | null;
  readonly inFlight: number;
  /** closed, open, half_open; `none` where no circuit is kept (the controller). */
  readonly circuit: string;
  readonly lastError: { readonly message: string; readonly at: number } | null;
}

/** One P-D link; `code` says why a failed link failed (an LLM code or an instance down). */
export interface DashboardLink {
  readonly p: number;
  readonly d: number;
  readonly state: DashboardLinkState;
  readonly code: string | null;
}

/** A recent failure: a request (the Coordinator) or an instance's error (the controller). */
export interface DashboardFailure {
  readonly at: number;
  /** The client's request id, or `instance <id>`. */
  readonly subject: string;
  /** Instances involved (P and D of a request). */
  readonly instances: readonly number[];
  readonly reason: string;
}

/** One rate series; `values[i]` is per second over the second ending at `times[i]`. */
export interface DashboardSeries {
  readonly name: string;
  readonly unit: string;
  readonly values: readonly number[];
}

/** A standing fact the page shows above everything (the controller's topology file: applied or refused). */
export interface DashboardNotice {
  readonly subject: string;
  readonly message: string;
  /** false: something needs the operator (a refused file). */
  readonly ok: boolean;
  readonly at: number;
}

/** The Coordinator's admission: what waits per class (and for whom), and each stage's room. */
export interface DashboardAdmission {
  readonly inFlight: number;
  readonly queued: number;
  readonly queuedBytes: number;
  /** Highest class first. */
  readonly classes: readonly {
    readonly name: string;
    readonly queued: number;
    readonly running: number;
    readonly queueTimeoutMs: number;
    /** The tenants waiting most, most first. */
    readonly tenants: readonly { readonly tenant: string; readonly queued: number }[];
  }[];
  /** Requests each stage can still start (0: saturated), and what this Coordinator holds there. */
  readonly stages: {
    readonly prefill: { readonly instances: number; readonly room: number; readonly inFlight: number };
    readonly decode: { readonly instances: number; readonly room: number; readonly inFlight: number };
  };
}

/** One KV-event stream the Coordinator follows (an instance's DP rank), with what happened on it. */
export interface DashboardKvStream {
  readonly instance: string;
  readonly dpRank: number;
  readonly endpoint: string;
  readonly connected: boolean;
  readonly lastSeq: string | null;
  readonly applied: number;
  readonly replayed: number;
  /** Batches skipped: malformed payloads, oversize ones, frames that were not [topic, seq, payload]. */
  readonly skipped: number;
  readonly gaps: number;
  readonly resets: { readonly restart: number; readonly gap_unfilled: number; readonly cleared: number };
  readonly orphans: number;
  readonly lastError: string | null;
}

/** The engines' KV events as the Coordinator follows them: the index's size, each stream, unusable entries. */
export interface DashboardKvEvents {
  readonly heldBlocks: number;
  readonly bytes: number;
  readonly streams: readonly DashboardKvStream[];
  /** Instances whose refresh entry names an endpoint that cannot be used, and why. */
  readonly problems: readonly { readonly instance: number; readonly reason: string }[];
}

export interface DashboardState {
  readonly source: 'coordinator' | 'controller';
  readonly at: number;
  readonly instances: readonly DashboardInstance[];
  readonly links: readonly DashboardLink[];
  /** Sample times (ms since the epoch), oldest first, shared by every series. */
  readonly times: readonly number[];
  readonly series: readonly DashboardSeries[];
  /** Newest first. */
  readonly failures: readonly DashboardFailure[];
  readonly notices: readonly DashboardNotice[];
  /** Admission's queue and stages; null where there is none (the controller, admission off). */
  readonly admission: DashboardAdmission | null;
  /** The engines' KV-event streams; null where there are none (the controller, no publisher). */
  readonly kvEvents: DashboardKvEvents | null;
}

/** The topology half of the state, which a source reads on demand. */
export interface DashboardTopology {
  readonly instances: readonly DashboardInstance[];
  readonly links: readonly DashboardLink[];
}

/**
 * What a server gives the feed: its topology, cumulative counters turned into rates, its latest
 * failures, and a way to hear that any of them changed.
 */
export interface DashboardSource {
  readonly kind: DashboardState['source'];
  topology(): DashboardTopology;
  /** Cumulative counters by series name (requests, failures, KV bytes); the feed turns them into rates. */
  counters(): Readonly<Record<string, { readonly unit: string; readonly total: number }>>;
  failures(): readonly DashboardFailure[];
  /** Standing facts to show (absent: none). */
  notices?(): readonly DashboardNotice[];
  /** Admission's queue and stages, when the source has admission. */
  admission?(): DashboardAdmission | null;
  /** The KV-event streams, when the source follows any. */
  kvEvents?(): DashboardKvEvents | null;
  /** Calls `changed` whenever the topology or failures may have changed; returns the unsubscribe. */
  watch(changed: () => void): () => void;
}
