/**
 * The planner: the part of the controller that proposes moves between prefill and decode. It samples
 * its signals every second (or every interval, if shorter), keeps them per group over a window that
 * starts again whenever the group changes (a move, a death, a scale-out), and every interval decides
 * for each group (decide.ts): a move, handed to the controller, which drains and switches the
 * instance (moves.ts), or the reason for none. Only a leader that may act decides. Every decision is
 * counted, the latest of each group is shown (`GET /v1/cluster`, /dashboard), and a decision whose
 * reason changed, as every move, is logged.
 */
import type { Role } from '../../schema/role.ts';
import type { ControllerView, MemberView } from '../controller-view.ts';
import type { MoveRequest, MoveStart, MovesView } from './moves.ts';
import { decideGroup, type Decision, type DecisionCode, type StageState } from './decide.ts';
import { groupLoads, meanPressure, slaDemand, type GroupLoad, type Stage } from './pressure.ts';
import type { RequestTotals } from './request-totals.ts';
import { settingsLine, type PlannerSettings } from './settings.ts';

/** What the planner reads of the controller and asks of it. */
export interface PlannerPort {
  view(): ControllerView;
  /** The controller leads and may act now. */
  acting(): boolean;
  move(id: number, to: Role, request: MoveRequest): MoveStart;
  readonly moves: MovesView;
  /** The Coordinators' management URLs (SLA mode reads their request totals). */
  coordinators(): readonly string[];
}

export interface PlannerOptions {
  readonly settings: PlannerSettings;
  readonly port: PlannerPort;
  /** SLA mode's source of the request mix. */
  readonly totals?: RequestTotals;
  readonly now?: () => number;
  readonly log?: (line: string) => void;
  readonly decided?: (decision: Decision) => void;
}

interface Sample {
  readonly at: number;
  readonly prefill: number;
  readonly decode: number;
}

/** A group's signals since it last changed. */
interface Window {
  /** Serving P and D counts: a change starts the window again. */
  readonly key: string;
  readonly since: number;
  readonly samples: Sample[];
}

/** What an operator sees of one group. */
export interface PlannerGroupView {
  readonly group: number;
  readonly prefill: number;
  readonly decode: number;
  readonly decision: Decision | undefined;
}

export interface PlannerView {
  readonly settings: PlannerSettings;
  readonly acting: boolean;
  readonly groups: readonly PlannerGroupView[];
}

/** The planner samples at least this often. */
const SAMPLE_MS = 1000;

export class Planner {
  #settings: PlannerSettings;
  readonly #port: PlannerPort;
  readonly #totals: RequestTotals | undefined;
  readonly #now: () => number;
  readonly #log: (line: string) => void;
  readonly #decided: (decision: Decision) => void;
  readonly #windows = new Map<number, Window>();
  readonly #last = new Map<number, Decision>();
  #counts = new Map<number, { prefill: number; decode: number }>();
  #timers: ReturnType<typeof setInterval>[] = [];

  /** @example const planner = new Planner({ settings, port }); planner.start(); */
  constructor(options: PlannerOptions) {
    this.#settings = options.settings;
    this.#port = options.port;
    this.#totals = options.totals;
    this.#now = options.now ?? Date.now;
    this.#log = options.log ?? (() => {});
    this.#decided = options.decided ?? (() => {});
  }

  get settings(): PlannerSettings {
    return this.#settings;
  }

  /** Samples and decides on timers while its mode is not off; idempotent. */
  start(): void {
    if (this.#timers.length > 0 || this.#settings.mode === 'off') return;
    const s = this.#settings;
    this.#timers.push(setInterval(() => void this.sample(this.#now()), Math.min(SAMPLE_MS, s.intervalMs)));
    this.#timers.push(setInterval(() => this.decide(this.#now()), s.intervalMs));
  }

  stop(): void {
    for (const timer of this.#timers) clearInterval(timer);
    this.#timers = [];
  }

  /**
   * New settings (the topology file was reloaded): timers and windows start again.
   * @example planner.configure(nextSpec.planner);
   */
  configure(settings: PlannerSettings): void {
    if (JSON.stringify(settings) === JSON.stringify(this.#settings)) return;
    this.stop();
    this.#settings = settings;
    this.#windows.clear();
    this.#last.clear();
    if (this.#totals !== undefined) this.#totals.keepMs = settings.windowMs;
    this.#log(settingsLine(settings));
    this.start();
  }

  /**
   * Takes one sample of every group's signals.
   * @example await planner.sample(Date.now());
   */
  async sample(now: number): Promise<void> {
    const s = this.#settings;
    if (s.mode === 'off') return;
    const loads = groupLoads(this.#port.view().members, s.load);
    this.#counts = new Map(loads.map((g) => [g.group, { prefill: g.prefill.length, decode: g.decode.length }]));
    for (const g of loads) {
      const key = `${g.prefill.length}:${g.decode.length}`;
      let window = this.#windows.get(g.group);
      if (window === undefined || window.key !== key) this.#windows.set(g.group, (window = { key, since: now, samples: [] }));
      window.samples.push({ at: now, prefill: meanPressure(g.prefill), decode: meanPressure(g.decode) });
      while (window.samples.length > 0 && window.samples[0]!.at < now - s.windowMs) window.samples.shift();
    }
    for (const group of [...this.#windows.keys()]) if (!this.#counts.has(group)) this.#windows.delete(group);
    if (s.mode === 'sla') await this.#totals?.sample(this.#port.coordinators(), now);
  }

  /**
   * Decides for every group; at most one move starts.
   * @example planner.decide(Date.now()).filter((d) => d.code === 'move')
   */
  decide(now: number): Decision[] {
    const s = this.#settings;
    if (s.mode === 'off' || !this.#port.acting()) return [];
    const view = this.#port.view();
    const loads = groupLoads(view.members, s.load);
    const byId = new Map(view.members.map((m) => [m.id, m]));
    const mix = s.mode === 'sla' ? this.#totals?.mix(now - s.windowMs) : undefined;
    const serving = loads.reduce((n, g) => n + g.prefill.length + g.decode.length, 0);
    const decisions: Decision[] = [];
    let moved = false;
    for (const g of loads) {
      let decision = this.#decideOne(g, now, byId, mix === undefined ? undefined : { mix, serving });
      if (decision.move !== undefined) {
        if (moved) decision = { ...decision, code: 'move_in_progress', reason: `another group's move starts first`, move: undefined };
        else decision = this.#start(decision);
        moved ||= decision.code === 'move';
      }
      decisions.push(decision);
      this.#record(decision);
    }
    return decisions;
  }

  view(): PlannerView {
    const groups = [...new Set([...this.#counts.keys(), ...this.#last.keys()])].sort((a, b) => a - b);
    return {
      settings: this.#settings,
      acting: this.#port.acting(),
      groups: groups.map((group) => ({
        group,
        prefill: this.#counts.get(group)?.prefill ?? 0,
        decode: this.#counts.get(group)?.decode ?? 0,
        decision: this.#last.get(group),
      })),
    };
  }

  #decideOne(
    g: GroupLoad,
    now: number,
    byId: ReadonlyMap<number, MemberView>,
    sla: { mix: NonNullable<ReturnType<RequestTotals['mix']>>; serving: number } | undefined,
  ): Decision {
    const s = this.#settings;
    const hold = (code: DecisionCode, reason: string): Decision => ({
      group: g.group,
      at: now,
      code,
      reason,
      pressure: undefined,
      move: undefined,
    });
    const current = this.#port.moves.current;
    if (current !== undefined)
      return hold('move_in_progress', `instance ${current.id} is moving ${current.from} → ${current.to} (${current.phase})`);
    const ended = this.#port.moves.lastEnded(g.group);
    if (ended !== undefined && now < ended + s.cooldownMs)
      return hold('cooling_down', `cooling down after the group's last move: ${Math.ceil((ended + s.cooldownMs - now) / 1000)} s left`);
    if (g.prefill.length === 0 || g.decode.length === 0)
      return hold('no_serving', `the group has no serving ${g.prefill.length === 0 ? 'prefill' : 'decode'} instance`);
    const window = this.#windows.get(g.group);
    if (window === undefined || now - window.since < s.windowMs || window.samples.length === 0)
      return hold('warming_up', `gathering ${s.windowMs / 1000} s of signals since the group last changed`);
    const stage = (name: Stage, pressure: number): StageState => ({
      count: g[name].length,
      pressure,
      movable: [...g[name]]
        .filter((i) => !byId.get(i.id)!.roleFixed && byId.get(i.id)!.move?.pinned !== true)
        .sort((a, b) => a.pressure - b.pressure || a.id - b.id)
        .map((i) => i.id),
      min: name === 'prefill' ? s.minPrefillPerGroup : s.minDecodePerGroup,
    });
    if (s.mode === 'load') {
      const mean = (key: Stage): number => window.samples.reduce((sum, x) => sum + x[key], 0) / window.samples.length;
      return decideGroup(g.group, now, {
        mode: 'load',
        margin: s.margin,
        prefill: stage('prefill', mean('prefill')),
        decode: stage('decode', mean('decode')),
      });
    }
    if (sla === undefined || s.sla === undefined)
      return hold('no_request_totals', 'no Coordinator reported its request totals over the window');
    const demand = slaDemand(sla.mix, s.sla.capacity, (g.prefill.length + g.decode.length) / sla.serving);
    return decideGroup(g.group, now, {
      mode: 'sla',
      margin: s.margin,
      prefill: stage('prefill', demand.prefill / g.prefill.length),
      decode: stage('decode', demand.decode / g.decode.length),
    });
  }

  #start(decision: Decision): Decision {
    const move = decision.move!;
    try {
      this.#port.move(move.id, move.to, { by: 'planner', reason: decision.reason });
      return decision;
    } catch (err) {
      const why = err instanceof Error ? err.message : String(err);
      return { ...decision, code: 'refused', reason: `the move was refused: ${why}`, move: undefined };
    }
  }

  #record(decision: Decision): void {
    const last = this.#last.get(decision.group);
    this.#last.set(decision.group, decision);
    this.#decided(decision);
    if (decision.code === 'move' || last?.code !== decision.code)
      this.#log(`planner: group ${decision.group}: ${decision.code}: ${decision.reason}`);
  }
}
