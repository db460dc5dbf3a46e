/**
 * What the proxy CPU benchmark reads of a process from /proc and from JSC's GC log: CPU time and
 * context switches summed over every thread, CPU pinning, and the garbage between two collections.
 */
import { readdirSync, readFileSync } from 'node:fs';

export function tasks(pid: number): string[] {
  try {
    return readdirSync(`/proc/${pid}/task`);
  } catch {
    return [];
  }
}

/** Per process, the CPU each thread had used when last read (threads that ended keep their last figure). */
const seen = new Map<number, Map<string, number>>();

/**
 * ns on CPU of `pid`, every thread, from /proc's exact per-thread schedstat figures. A thread that
 * has ended since the last reading counts with what it had used then, so the sum never goes
 * backwards (summing the live threads alone did, whenever one ended between two readings); only
 * what it used after the last reading is missed.
 */
export function cpuNs(pid: number): number {
  let threads = seen.get(pid);
  if (threads === undefined) seen.set(pid, (threads = new Map()));
  for (const tid of tasks(pid)) {
    try {
      threads.set(tid, Number(readFileSync(`/proc/${pid}/task/${tid}/schedstat`, 'utf8').split(' ')[0]));
    } catch {
      // A thread that ended between the listing and the read: its last figure stands.
    }
  }
  let ns = 0;
  for (const used of threads.values()) ns += used;
  return ns;
}

/**
 * Threads of JavaScriptCore's compilers. `JSCWarmUp` is not one: it makes the pages of new heap
 * blocks resident before the allocator hands them out, a cost of allocating that lasts as long as
 * the allocating does.
 */
const JIT_THREAD = /^JITWorker/;

/** ns on CPU of `pid`'s JIT compiler threads (zero for a process that has none, such as nginx). */
export function jitNs(pid: number): number {
  let ns = 0;
  for (const tid of tasks(pid)) {
    try {
      if (!JIT_THREAD.test(readFileSync(`/proc/${pid}/task/${tid}/comm`, 'utf8'))) continue;
      ns += Number(readFileSync(`/proc/${pid}/task/${tid}/schedstat`, 'utf8').split(' ')[0]);
    } catch {
      // A thread that ended between the listing and the read.
    }
  }
  return ns;
}

/**
 * ns on CPU of `pid`'s threads by kind: the JS thread (the process's first), Bun's HTTP client
 * thread (`HTTP Client`, where fetch runs), the JIT compilers, and everything else.
 */
export function cpuByThread(pid: number): Record<ThreadKind, number> {
  const out: Record<ThreadKind, number> = { js: 0, httpClient: 0, jit: 0, other: 0 };
  for (const tid of tasks(pid)) {
    try {
      const name = readFileSync(`/proc/${pid}/task/${tid}/comm`, 'utf8').trim();
      const ns = Number(readFileSync(`/proc/${pid}/task/${tid}/schedstat`, 'utf8').split(' ')[0]);
      const kind: ThreadKind = tid === String(pid) ? 'js' : name === 'HTTP Client' ? 'httpClient' : JIT_THREAD.test(name) ? 'jit' : 'other';
      out[kind] += ns;
    } catch {
      // A thread that ended between the listing and the read.
    }
  }
  return out;
}

export type ThreadKind = 'js' | 'httpClient' | 'jit' | 'other';

/** Voluntary + involuntary context switches, every thread of `pid`. */
export function contextSwitches(pid: number): number {
  let n = 0;
  for (const tid of tasks(pid)) {
    try {
      const status = readFileSync(`/proc/${pid}/task/${tid}/status`, 'utf8');
      for (const m of status.matchAll(/^(?:non)?voluntary_ctxt_switches:\s+(\d+)$/gm)) n += Number(m[1]);
    } catch {
      // A thread that ended between the listing and the read.
    }
  }
  return n;
}

export function pinned(cpus: string, command: string[]): string[] {
  return ['taskset', '-c', cpus, ...command];
}

/** Moves every thread of `pid` to `cpus` (a taskset list). */
export function setAffinity(pid: number, cpus: string): void {
  const result = Bun.spawnSync(['taskset', '-a', '-p', '-c', cpus, String(pid)], { stdout: 'ignore', stderr: 'pipe' });
  if (result.exitCode !== 0) throw new Error(`taskset ${cpus} ${pid}: ${result.stderr.toString()}`);
}

export interface Garbage {
  bytes: number;
  gcs: number;
  /** Of `gcs`, the full (major) collections. */
  fullGcs: number;
  /** The longest collection's pause: the sum of its stop-the-world pieces. */
  maxPauseMs: number;
  /** Every collection's pauses, summed: time the JS thread stood still for the collector. */
  pauseMs: number;
}

/**
 * Reads JSC's GC log (BUN_JSC_logGC) printed since `from`. A collection is logged from its
 * `START <before>kb => <kind>` to its `cycle <ms>ms END]`: one line when it ran in one pause, one
 * line per pause when parts ran concurrently. Its heap after is the last `=> <after>kb` and its
 * pauses are every `p=<ms>ms` in between.
 */
export function garbageIn(log: string): Garbage {
  const cycles = [...log.matchAll(/START \S+ (\d+)kb => (\w+),([\s\S]*?)cycle [\d.]+ms END\]/g)].map((m) => {
    const body = m[3]!;
    const after = [...body.matchAll(/=> (\d+)kb/g)].at(-1)?.[1] ?? m[1]!;
    let pause = 0;
    for (const p of body.matchAll(/p=([\d.]+)ms/g)) pause += Number(p[1]);
    return { before: Number(m[1]) * 1024, after: Number(after) * 1024, full: m[2] === 'FullCollection', pause };
  });
  // The first cycle is the forced one before the run, the last the forced one after it: what was
  // allocated in between is what each cycle found on top of what the previous one left.
  let bytes = 0;
  let maxPauseMs = 0;
  let pauseMs = 0;
  let fullGcs = 0;
  for (let i = 1; i < cycles.length; i++) {
    bytes += Math.max(0, cycles[i]!.before - cycles[i - 1]!.after);
    if (i === cycles.length - 1) continue;
    maxPauseMs = Math.max(maxPauseMs, cycles[i]!.pause);
    pauseMs += cycles[i]!.pause;
    if (cycles[i]!.full) fullGcs++;
  }
  return { bytes, gcs: Math.max(0, cycles.length - 2), fullGcs, maxPauseMs, pauseMs };
}
