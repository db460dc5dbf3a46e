/**
 * Where a process's resident memory sits, from /proc/<pid>/smaps: the runtime's own executable
 * (its machine code and read-only data, paged in from the file as it runs and shared with every
 * process of the same binary), other files (shared libraries), anonymous writable memory (the
 * allocator's arena, which holds the JS heap as well as the runtime's native buffers; thread stacks too), executable
 * anonymous memory (JIT code) and the rest (stacks, kernel pages). rss.bench.ts reports it so a
 * figure can be read as "what pdlink holds" against "what the runtime costs anyway".
 */
import { readFileSync } from 'node:fs';

export interface Regions {
  /** Resident pages of the runtime's executable file: code, then the rest (read-only data). */
  readonly binaryCodeMiB: number;
  readonly binaryDataMiB: number;
  readonly librariesMiB: number;
  /** Anonymous writable memory: the allocator's arena (JS heap and native allocations). */
  readonly anonymousMiB: number;
  readonly jitMiB: number;
  readonly otherMiB: number;
}

/**
 * The resident memory of `pid` by kind of mapping, MiB.
 * @example const r = regions(child.pid!, process.execPath); r.anonymousMiB
 */
export function regions(pid: number, executable: string): Regions {
  const totals = { binaryCodeMiB: 0, binaryDataMiB: 0, librariesMiB: 0, anonymousMiB: 0, jitMiB: 0, otherMiB: 0 };
  let kind: keyof typeof totals = 'otherMiB';
  for (const line of readFileSync(`/proc/${pid}/smaps`, 'utf8').split('\n')) {
    const map = /^[0-9a-f]+-[0-9a-f]+ (\S+) \S+ \S+ \S+\s*(.*)$/.exec(line);
    if (map !== null) {
      const [, perms, name] = map as unknown as [string, string, string];
      if (name === executable) kind = perms.includes('x') ? 'binaryCodeMiB' : 'binaryDataMiB';
      else if (name.startsWith('/')) kind = 'librariesMiB';
      else if (name === '' || name === '[heap]') kind = perms.includes('x') ? 'jitMiB' : 'anonymousMiB';
      else kind = 'otherMiB';
      continue;
    }
    const rss = /^Rss:\s+(\d+) kB/.exec(line);
    if (rss !== null) totals[kind] += Number(rss[1]) / 1024;
  }
  return totals;
}
