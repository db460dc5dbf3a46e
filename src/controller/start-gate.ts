/**
 * When a leading controller may act, and what it may push. It acts only while `mayAct` (the
 * leadership's proof that its lease is live) says so. A controller that starts leading (a lone one
 * at start, a new leader at a takeover) knows nothing yet of what its agents hold, so a snapshot
 * composed from its first view would drop every instance it has not read: the Coordinators would
 * empty and answer 503. Until every member is judged (serving again, silent for the heartbeat
 * timeout, or the settle time of heartbeat timeout plus role retry gone), an unjudged member that
 * the stored snapshot lists stays in with its stored entry, and with no stored entry to stand for it
 * no snapshot goes out at all (the Coordinators keep what they hold). No role is posted before every
 * member has been read once: a body lists only the peers that answer.
 */
import type { Member } from './member.ts';
import { inProgress } from './planner/move.ts';
import type { RefreshBody, RefreshInstanceBody, SnapshotCandidate } from './snapshot.ts';
import type { ControllerTiming } from './types.ts';

export class StartGate {
  readonly #timing: ControllerTiming;
  readonly #mayAct: () => boolean;
  /** When polling began after the start (the first evaluation): silence counts from there, not from a slow start-up. */
  #startedAt: number | undefined;
  #startMark = 0;
  #baseline = new Map<number, RefreshInstanceBody>();
  #open = true;
  #passed = true;
  #seenAll = true;

  /**
   * A gate that begins at once when `leading` (a lone controller), else at begin() (a standby's takeover).
   * @example const gate = new StartGate(timing, () => election.mayAct(), true);
   */
  constructor(timing: ControllerTiming, mayAct: (() => boolean) | undefined, leading: boolean) {
    this.#timing = timing;
    this.#mayAct = mayAct ?? (() => true);
    if (leading) this.begin(0, undefined);
  }

  /** Whether a leader may act now (its lease proven live). */
  mayAct(): boolean {
    return this.#mayAct();
  }

  /** Every member is judged: snapshots are composed from what the controller saw alone. */
  get open(): boolean {
    return this.#open;
  }

  /** A snapshot has been let through since the start: a Coordinator that asks may be sent it. */
  get passed(): boolean {
    return this.#passed;
  }

  /**
   * Leading starts now; members are judged by what happens after event mark `mark`; `baseline` is
   * the snapshot stored by the last leader (undefined: none).
   * @example gate.begin(takeoverMark, state.snapshot);
   */
  begin(mark: number, baseline: RefreshBody | undefined): void {
    this.#startedAt = undefined;
    this.#startMark = mark;
    this.#baseline = new Map((baseline?.instances ?? []).map((i) => [i.id, i]));
    this.#open = false;
    this.#passed = false;
    this.#seenAll = false;
  }

  /**
   * The candidates to compose a snapshot from: `fresh` plus the stored entry of every unjudged
   * member the baseline lists; undefined (send nothing) while an unjudged member has no stored entry.
   * @example const candidates = gate.candidates(snapshotCandidates(members, now, hb, book), members, now);
   */
  candidates(fresh: SnapshotCandidate[], members: ReadonlyMap<number, Member>, now: number): SnapshotCandidate[] | undefined {
    if (this.#open) return fresh;
    const unjudged = [...members.values()].filter((m) => !this.#judged(m, now));
    if (unjudged.length === 0) {
      this.#open = true;
      this.#passed = true;
      this.#baseline.clear();
      return fresh;
    }
    const have = new Set(fresh.map((c) => c.id));
    const stand: SnapshotCandidate[] = [];
    for (const m of unjudged) {
      if (have.has(m.id)) continue;
      const entry = this.#baseline.get(m.id);
      if (entry === undefined) return undefined;
      stand.push(candidateOf(entry, m));
    }
    this.#passed = true;
    return [...fresh, ...stand];
  }

  /**
   * Whether roles may be posted: once every member has been read since the start (or the heartbeat
   * timeout has passed). A body lists only the peers that answer, so one planned before a peer was
   * read would unlink it.
   * @example if (!gate.mayPost(members, now)) return;
   */
  mayPost(members: ReadonlyMap<number, Member>, now: number): boolean {
    if (this.#seenAll) return true;
    if (now - (this.#startedAt ??= now) < this.#timing.heartbeatTimeoutMs) {
      for (const m of members.values()) if (m.observedMark <= this.#startMark) return false;
    }
    return (this.#seenAll = true);
  }

  /** Serving (joined and answering), dead (silent a heartbeat timeout counted from the start), leaving or moving, or the settle time gone. */
  #judged(m: Member, now: number): boolean {
    const t = this.#timing;
    const since = now - (this.#startedAt ??= now);
    // Leaving, or moving between roles: out of the snapshot by decision, until it joins again.
    if (m.drain !== undefined || inProgress(m.move) || since >= t.heartbeatTimeoutMs + t.roleRetryMs) return true;
    if (m.lastSeenAt !== undefined && m.alive(now, t.heartbeatTimeoutMs)) return m.joined;
    // Silent: dead once silent for the heartbeat timeout counted from the start. The silence a
    // standby saw before may be its own (a starved process reads its agents late).
    return since >= t.heartbeatTimeoutMs;
  }
}

/** A stored snapshot entry as a candidate, its peers as the entry lists them. */
function candidateOf(entry: RefreshInstanceBody, m: Member): SnapshotCandidate {
  const s = entry.static_info;
  return {
    id: entry.id,
    role: s.role === 80 ? 'prefill' : 'decode',
    group: s.group_id,
    ip: entry.ip,
    port: Number(entry.port),
    metricPort: Number(entry.metric_port),
    modelName: entry.model_name,
    staticInfo: {
      maxSeqLen: s.max_seq_len,
      maxOutputLen: s.max_output_len,
      totalSlots: s.total_slots_num,
      totalBlocks: s.total_block_num,
      blockSize: s.block_size,
    },
    resources: m.observation?.resources ?? {
      totalSlots: s.total_slots_num,
      availSlots: entry.dynamic_info.avail_slots_num,
      totalBlocks: s.total_block_num,
      availBlocks: entry.dynamic_info.avail_block_num,
    },
    linkedPeers: entry.dynamic_info.peers,
  };
}
