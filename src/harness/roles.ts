/**
 * The roles of a pdlink cluster while a benchmark runs, for a run against a cluster whose controller
 * may move instances between prefill and decode: `pdlink bench --controller-url` polls the
 * controller's `GET /v1/cluster` and keeps each instance's role and state as they change, and the
 * moves between roles that ended during the run. The report carries it as the run's role timeline;
 * the page draws the serving prefill and decode counts over time beside the load.
 */

/** How often the controller is read. */
export const ROLE_POLL_MS = 500;

export interface RoleChange {
  /** Milliseconds from the start of the watch (the run's start, within a poll's call). */
  readonly atMs: number;
  readonly id: number;
  readonly role: string;
  /** The controller's state of the instance (serving, moving, posting, linking, down, ...). */
  readonly state: string;
}

export interface RoleMoveRecord {
  readonly id: number;
  readonly from: string;
  readonly to: string;
  readonly by: string;
  readonly outcome: string;
  /** Milliseconds from the start of the watch; negative when the move began before it. */
  readonly startedMs: number;
  readonly endedMs: number;
}

export interface RoleTimeline {
  readonly controller: string;
  /** Reads that answered, and those that did not. */
  readonly polls: number;
  readonly failedPolls: number;
  /** Every instance's first seen role and state at its first read, then each change. */
  readonly changes: RoleChange[];
  /** Moves that ended during the watch (the controller's planner history). */
  readonly moves: RoleMoveRecord[];
}

interface ClusterBody {
  readonly instances?: readonly { id?: unknown; role?: unknown; state?: unknown }[];
  readonly planner?: { readonly history?: readonly Record<string, unknown>[] } | null;
}

export class RoleWatcher {
  readonly #url: string;
  readonly #fetch: (url: string) => Promise<unknown>;
  readonly #started = Date.now();
  readonly #last = new Map<number, string>();
  readonly #changes: RoleChange[] = [];
  readonly #moves = new Map<string, RoleMoveRecord>();
  #polls = 0;
  #failed = 0;
  #timer: ReturnType<typeof setInterval> | undefined;
  #reading: Promise<void> = Promise.resolve();
  #stopped: Promise<RoleTimeline> | undefined;

  /**
   * Starts watching the controller at `url` (its management URL) at once.
   * @example const watcher = RoleWatcher.start('http://127.0.0.1:1030'); ...; const timeline = await watcher.stop();
   */
  static start(url: string, fetchJson?: (url: string) => Promise<unknown>): RoleWatcher {
    const watcher = new RoleWatcher(url, fetchJson);
    void watcher.poll();
    watcher.#timer = setInterval(() => void watcher.poll(), ROLE_POLL_MS);
    return watcher;
  }

  constructor(url: string, fetchJson: (url: string) => Promise<unknown> = defaultFetch) {
    this.#url = url.replace(/\/+$/, '');
    this.#fetch = fetchJson;
  }

  /**
   * Takes one more read and stops; resolves with the timeline (the same one when called again).
   * @example const timeline = await watcher.stop();
   */
  stop(): Promise<RoleTimeline> {
    this.#stopped ??= this.#finish();
    return this.#stopped;
  }

  async #finish(): Promise<RoleTimeline> {
    clearInterval(this.#timer);
    await this.poll();
    return {
      controller: this.#url,
      polls: this.#polls,
      failedPolls: this.#failed,
      changes: this.#changes,
      moves: [...this.#moves.values()].sort((a, b) => a.endedMs - b.endedMs),
    };
  }

  /**
   * Reads the controller once more, after any read under way (a slow controller is read less often,
   * never twice at once).
   * @example await watcher.poll();
   */
  poll(): Promise<void> {
    this.#reading = this.#reading.then(() => this.#once());
    return this.#reading;
  }

  async #once(): Promise<void> {
    let body: ClusterBody;
    try {
      body = (await this.#fetch(`${this.#url}/v1/cluster`)) as ClusterBody;
    } catch {
      this.#failed++;
      return;
    }
    this.#polls++;
    const atMs = Date.now() - this.#started;
    for (const i of body.instances ?? []) {
      if (typeof i.id !== 'number' || typeof i.role !== 'string' || typeof i.state !== 'string') continue;
      const key = `${i.role}/${i.state}`;
      if (this.#last.get(i.id) === key) continue;
      this.#last.set(i.id, key);
      this.#changes.push({ atMs, id: i.id, role: i.role, state: i.state });
    }
    for (const m of body.planner?.history ?? []) {
      const ended = typeof m['ended_at'] === 'string' ? Date.parse(m['ended_at']) : NaN;
      const started = typeof m['started_at'] === 'string' ? Date.parse(m['started_at']) : NaN;
      if (!Number.isFinite(ended) || ended < this.#started || typeof m['id'] !== 'number') continue;
      const key = `${m['id']}@${m['started_at']}`;
      this.#moves.set(key, {
        id: m['id'],
        from: String(m['from']),
        to: String(m['to']),
        by: String(m['by']),
        outcome: String(m['outcome'] ?? 'done'),
        startedMs: started - this.#started,
        endedMs: ended - this.#started,
      });
    }
  }
}

async function defaultFetch(url: string): Promise<unknown> {
  const res = await fetch(url, { signal: AbortSignal.timeout(5000) });
  if (!res.ok) throw new Error(`${url} answered ${res.status}`);
  return res.json();
}
