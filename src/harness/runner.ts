/**
 * Drives a workload against a target: open loop (each request sent at its arrival time whatever
 * the server is doing, the way production traffic arrives) or closed loop (a fixed number of
 * clients, each sending its next request when its last one ended). Every run is bounded in
 * requests and in time; when the bound or a stop signal comes, requests still running are cut
 * and the run ends with what it has.
 */
import { sendRequest, type RequestRecord } from './client.ts';
import { promptText } from './prompt-text.ts';
import type { Target } from './target.ts';
import type { WorkItem, Workload } from './workload.ts';

export type StoppedBy = 'complete' | 'time_bound' | 'signal';

export interface RunSettings {
  readonly target: Target;
  readonly workload: Workload;
  /** At most this many requests (the first ones of the workload). */
  readonly maxRequests: number;
  /** The run stops sending and cuts what is running after this long. */
  readonly durationMs: number;
  /** Aborted when the user stops the benchmark (Ctrl-C). */
  readonly stop: AbortSignal;
  /** Prefix of the request ids, unique per run. */
  readonly idPrefix: string;
  /** Called as each request ends. */
  readonly onRecord?: (record: RequestRecord) => void;
}

export interface RunResult {
  readonly mode: 'open' | 'closed';
  readonly concurrency: number | null;
  readonly startedAt: string;
  readonly durationMs: number;
  readonly stoppedBy: StoppedBy;
  readonly records: RequestRecord[];
}

/**
 * Replays the workload at its arrival times.
 * @example const result = await openLoop({ target, workload, maxRequests: 500, durationMs: 300_000, stop, idPrefix: 'bench-1' });
 */
export function openLoop(settings: RunSettings): Promise<RunResult> {
  return run(settings, 'open', null, async (items, send, cut, now) => {
    const running: Promise<void>[] = [];
    for (const item of items) {
      await waitUntil(item.arrivalMs, now, cut);
      if (cut.aborted) break;
      running.push(send(item, item.arrivalMs));
    }
    await Promise.all(running);
  });
}

/**
 * Sends the workload with `concurrency` clients, ignoring arrival times.
 * @example const result = await closedLoop(settings, 8);
 */
export function closedLoop(settings: RunSettings, concurrency: number): Promise<RunResult> {
  return run(settings, 'closed', concurrency, async (items, send, cut) => {
    let next = 0;
    const client = async (): Promise<void> => {
      while (!cut.aborted && next < items.length) await send(items[next++]!, null);
    };
    await Promise.all(Array.from({ length: concurrency }, client));
  });
}

type Driver = (
  items: readonly WorkItem[],
  send: (item: WorkItem, scheduledMs: number | null) => Promise<void>,
  cut: AbortSignal,
  now: () => number,
) => Promise<void>;

async function run(settings: RunSettings, mode: 'open' | 'closed', concurrency: number | null, drive: Driver): Promise<RunResult> {
  const { workload, target } = settings;
  const startedAt = new Date().toISOString();
  const t0 = performance.now();
  const now = (): number => performance.now() - t0;
  const cut = new AbortController();
  let stoppedBy: StoppedBy = 'complete';
  const bound = setTimeout(() => {
    stoppedBy = 'time_bound';
    cut.abort();
  }, settings.durationMs);
  const onStop = (): void => {
    if (stoppedBy === 'complete') stoppedBy = 'signal';
    cut.abort();
  };
  if (settings.stop.aborted) onStop();
  else settings.stop.addEventListener('abort', onStop, { once: true });
  const records: RequestRecord[] = [];
  const send = async (item: WorkItem, scheduledMs: number | null): Promise<void> => {
    const record = await sendRequest({
      target,
      index: item.index,
      requestId: `${settings.idPrefix}-${item.index}`,
      prompt: promptText(item.hashIds, workload.blockTokens, item.inputTokens, item.index),
      inputTokens: item.inputTokens,
      maxTokens: item.outputTokens,
      scheduledMs,
      now,
      cut: cut.signal,
      tenant: item.tenant,
      priority: item.priority,
    });
    records.push(record);
    settings.onRecord?.(record);
  };
  try {
    await drive(workload.items.slice(0, settings.maxRequests), send, cut.signal, now);
  } finally {
    clearTimeout(bound);
    settings.stop.removeEventListener('abort', onStop);
  }
  records.sort((a, b) => a.index - b.index);
  return { mode, concurrency, startedAt, durationMs: now(), stoppedBy, records };
}

/**
 * Resolves at `atMs` on the run's clock (never before: timers may fire a fraction of a millisecond
 * early, which would report a negative drift), or at once when the run is cut.
 */
async function waitUntil(atMs: number, now: () => number, cut: AbortSignal): Promise<void> {
  for (let delay = atMs - now(); delay > 0 && !cut.aborted; delay = atMs - now()) {
    await new Promise<void>((resolve) => {
      const done = (): void => {
        clearTimeout(timer);
        cut.removeEventListener('abort', done);
        resolve();
      };
      const timer = setTimeout(done, Math.max(1, Math.ceil(delay)));
      cut.addEventListener('abort', done, { once: true });
    });
  }
}
