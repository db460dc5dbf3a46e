/**
 * The numbers the HTML page draws, reduced from the report so the page stays small on long runs:
 * a latency CDF per metric and run (at most CDF_POINTS points), and a timeline per run of load
 * (requests in flight, sends per second, and of those the requests that met the SLO) and latency
 * (mean TTFT and TPOT of the requests sent in each time bin), and with a role timeline the serving
 * prefill and decode instances over the run. Numbers keep four significant digits, far finer than a chart can show.
 */
import type { BenchReport } from './report.ts';
import type { RoleTimeline } from './roles.ts';
import { meetsSlo } from './stats.ts';

/** Most points of one CDF curve; enough for a smooth line at any screen width. */
export const CDF_POINTS = 400;
/** Bins of a timeline. */
export const TIMELINE_BINS = 120;

export interface CdfCurve {
  /** Latency values, ascending. */
  readonly x: number[];
  /** Share of requests at or below x, in (0, 1]. */
  readonly y: number[];
}

export interface Timeline {
  /** Bin start, seconds from the run's start. */
  readonly t: number[];
  readonly inFlight: number[];
  readonly sentPerS: number[];
  readonly ttftMs: (number | null)[];
  readonly tpotMs: (number | null)[];
  /** Requests sent in the bin that met the SLO, per second. */
  readonly goodPerS: number[];
}

/** The cluster's roles over a run, as steps: at each time, the instances serving as each role, and the others. */
export interface RolesChart {
  /** Seconds from the start of the run. */
  readonly t: number[];
  readonly prefill: number[];
  readonly decode: number[];
  /** Instances not serving (moving, posting, linking, down, ...). */
  readonly other: number[];
}

export interface RunChartData {
  readonly label: string;
  readonly cdf: Record<'ttftMs' | 'tpotMs' | 'itlMs' | 'e2eMs', CdfCurve>;
  readonly timeline: Timeline;
  /** With a role timeline in the report. */
  readonly roles?: RolesChart;
}

/**
 * The serving counts of each role at every change of a role timeline, closed at the run's end.
 * @example rolesChart(run.roles, run.durationMs).decode // [1, 1, 2]
 */
export function rolesChart(timeline: RoleTimeline, durationMs: number): RolesChart {
  const now = new Map<number, { role: string; state: string }>();
  const out = { t: [] as number[], prefill: [] as number[], decode: [] as number[], other: [] as number[] };
  const push = (atMs: number): void => {
    let prefill = 0;
    let decode = 0;
    let other = 0;
    for (const i of now.values()) {
      if (i.state !== 'serving') other++;
      else if (i.role === 'prefill') prefill++;
      else if (i.role === 'decode') decode++;
      else other++;
    }
    const t = drawn(Math.max(0, atMs) / 1000);
    if (out.t.at(-1) === t) {
      out.t.pop();
      out.prefill.pop();
      out.decode.pop();
      out.other.pop();
    }
    out.t.push(t);
    out.prefill.push(prefill);
    out.decode.push(decode);
    out.other.push(other);
  };
  for (const c of timeline.changes) {
    now.set(c.id, { role: c.role, state: c.state });
    push(c.atMs);
  }
  if (timeline.changes.length > 0) push(Math.max(durationMs, timeline.changes.at(-1)!.atMs));
  return out;
}

/**
 * The CDF of a sample, thinned to at most CDF_POINTS points (the largest value always kept).
 * @example cdf([3, 1, 2]) // { x: [1, 2, 3], y: [1/3, 2/3, 1] }
 */
export function cdf(values: readonly number[]): CdfCurve {
  const sorted = [...values].sort((a, b) => a - b);
  const step = Math.max(1, Math.ceil(sorted.length / CDF_POINTS));
  const x: number[] = [];
  const y: number[] = [];
  for (let i = step - 1; i < sorted.length; i += step) {
    x.push(sorted[i]!);
    y.push((i + 1) / sorted.length);
  }
  if (sorted.length > 0 && x[x.length - 1] !== sorted[sorted.length - 1]) {
    x.push(sorted[sorted.length - 1]!);
    y.push(1);
  }
  return { x, y };
}

/**
 * The chart data of every run of a report.
 * @example const data = chartData(report);
 */
export function chartData(report: BenchReport): RunChartData[] {
  return report.runs.map((run) => {
    const ok = run.requests.filter((r) => r.outcome === 'ok');
    const curve = (values: number[]): CdfCurve => {
      const { x, y } = cdf(values);
      return { x: x.map(drawn), y: y.map(drawn) };
    };
    const line = timeline(run.requests, run.durationMs, report.slo);
    return {
      label: run.label,
      cdf: {
        ttftMs: curve(ok.flatMap((r) => (r.ttftMs === null ? [] : [r.ttftMs]))),
        tpotMs: curve(ok.flatMap((r) => (r.tpotMs === null ? [] : [r.tpotMs]))),
        itlMs: curve(ok.flatMap((r) => r.itlMs)),
        e2eMs: curve(ok.map((r) => r.e2eMs)),
      },
      timeline: {
        t: line.t.map(drawn),
        inFlight: line.inFlight,
        sentPerS: line.sentPerS.map(drawn),
        ttftMs: line.ttftMs.map((v) => (v === null ? null : drawn(v))),
        tpotMs: line.tpotMs.map((v) => (v === null ? null : drawn(v))),
        goodPerS: line.goodPerS.map(drawn),
      },
      ...(run.roles === undefined ? {} : { roles: rolesChart(run.roles, run.durationMs) }),
    };
  });
}

function timeline(requests: BenchReport['runs'][number]['requests'], durationMs: number, slo: BenchReport['slo']): Timeline {
  const binMs = Math.max(1, durationMs / TIMELINE_BINS);
  const bins = Math.max(1, Math.ceil(durationMs / binMs));
  const t: number[] = [];
  const inFlight: number[] = [];
  const sentPerS: number[] = [];
  const ttftMs: (number | null)[] = [];
  const tpotMs: (number | null)[] = [];
  const goodPerS: number[] = [];
  const mean = (xs: number[]): number | null => (xs.length === 0 ? null : xs.reduce((a, b) => a + b, 0) / xs.length);
  for (let b = 0; b < bins; b++) {
    const from = b * binMs;
    const to = from + binMs;
    const sent = requests.filter((r) => r.sentMs >= from && r.sentMs < to);
    t.push(from / 1000);
    inFlight.push(requests.filter((r) => r.sentMs <= from && r.sentMs + r.e2eMs > from).length);
    sentPerS.push(sent.length / (binMs / 1000));
    ttftMs.push(mean(sent.flatMap((r) => (r.outcome === 'ok' && r.ttftMs !== null ? [r.ttftMs] : []))));
    tpotMs.push(mean(sent.flatMap((r) => (r.outcome === 'ok' && r.tpotMs !== null ? [r.tpotMs] : []))));
    goodPerS.push(sent.filter((r) => meetsSlo(r, slo)).length / (binMs / 1000));
  }
  return { t, inFlight, sentPerS, ttftMs, tpotMs, goodPerS };
}

/**
 * A value as the page draws it: four significant digits.
 * @example drawn(26.637382) // 26.64
 */
export function drawn(value: number): number {
  return Number.isFinite(value) ? Number(value.toPrecision(4)) : value;
}
