/**
 * One `pdlink bench` invocation: the open-loop replay of the workload, or a closed-loop run per
 * concurrency level of a sweep, one after the other, then the report. A stop (Ctrl-C) cuts the
 * run in progress and skips the rest; the report then holds what was measured and says it is partial.
 * With a controller's URL, each run also keeps the cluster's roles as they change (roles.ts).
 */
import type { RequestRecord } from './client.ts';
import type { Progress } from './progress.ts';
import { RoleWatcher, type RoleTimeline } from './roles.ts';
import { buildReport, type BenchReport } from './report.ts';
import { closedLoop, openLoop, type RunResult } from './runner.ts';
import type { Slo } from './stats.ts';
import type { Target } from './target.ts';
import type { Workload } from './workload.ts';

export interface BenchPlan {
  readonly target: Target;
  readonly workload: Workload;
  /** Requests per run. */
  readonly maxRequests: number;
  /** Time bound per run. */
  readonly durationMs: number;
  /** Closed-loop concurrency levels; empty for an open-loop replay. */
  readonly concurrency: readonly number[];
  readonly slo: Slo;
  /** The command line's settings, recorded in the report. */
  readonly settings: Record<string, string | number | boolean | null>;
  /** A pdlink controller's management URL: each run keeps the cluster's roles as they change (roles.ts). */
  readonly controllerUrl?: string;
}

/**
 * Runs the plan and returns its report.
 * @example const report = await runBench(plan, stop.signal, progressFor(process.stderr));
 */
export async function runBench(plan: BenchPlan, stop: AbortSignal, progress: Progress): Promise<BenchReport> {
  const runs: (RunResult & { roles?: RoleTimeline })[] = [];
  const stamp = Date.now().toString(36);
  const levels: (number | null)[] = plan.concurrency.length === 0 ? [null] : [...plan.concurrency];
  const total = Math.min(plan.maxRequests, plan.workload.items.length);
  for (const [i, level] of levels.entries()) {
    if (stop.aborted) break;
    const settings = {
      target: plan.target,
      workload: plan.workload,
      maxRequests: plan.maxRequests,
      durationMs: plan.durationMs,
      stop,
      idPrefix: `bench-${stamp}-${i}`,
      onRecord: (record: RequestRecord) => progress.record(record),
    };
    progress.start(level === null ? 'open' : `closed-c${level}`, total);
    const watcher = plan.controllerUrl === undefined ? undefined : RoleWatcher.start(plan.controllerUrl);
    try {
      const result = level === null ? await openLoop(settings) : await closedLoop(settings, level);
      runs.push(watcher === undefined ? result : { ...result, roles: await watcher.stop() });
    } finally {
      await watcher?.stop();
      progress.stop();
    }
  }
  return buildReport({
    target: plan.target,
    workload: plan.workload,
    maxRequests: plan.maxRequests,
    settings: plan.settings,
    slo: plan.slo,
    runs,
  });
}
