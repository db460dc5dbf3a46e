/**
 * The end of a process whose runtime threads are alive, under CPU load, many times over: a link call
 * nobody awaits (the process ends by itself, exits while the call runs, or closes its pool), and
 * link/unlink churn through pools opened and closed while calls run. Two busy loops stand in for
 * the rest of a loaded machine; every run must end with its own status, never a signal. Deno used
 * to unmap the runtime library at the end while its threads were still in it (a SIGSEGV in about
 * one run in five under this load): the library is now pinned (library.ts `pinLibrary`, and the
 * reference runtime is linked `-z nodelete`).
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { fileURLToPath } from 'node:url';
import type { Subprocess } from 'bun';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const DENO = `${ROOT}node_modules/.bin/deno`;
const UNAWAITED = 'test/fixtures/links/unawaited-link.ts';
const CHURN = 'test/fixtures/links/churn.ts';

const busy: Subprocess[] = [];
beforeAll(() => {
  for (let i = 0; i < 2; i++) busy.push(Bun.spawn(['sh', '-c', 'while :; do :; done'], { stdout: 'ignore', stderr: 'ignore' }));
});
afterAll(() => {
  for (const child of busy) child.kill('SIGKILL');
});

interface Ending {
  readonly code: number | null;
  readonly signal: string | null;
  readonly err: string;
}

/** Runs one process to its end; one still running after 60 s is killed (and its ending says so). */
async function run(argv: readonly string[]): Promise<Ending> {
  const child = Bun.spawn([...argv], { cwd: ROOT, stdout: 'ignore', stderr: 'pipe', env: { ...process.env, NO_COLOR: '1' } });
  const killer = setTimeout(() => child.kill('SIGKILL'), 60_000);
  const [err] = await Promise.all([new Response(child.stderr).text(), child.exited]);
  clearTimeout(killer);
  return { code: child.exitCode, signal: child.signalCode === null ? null : String(child.signalCode), err: err.slice(-400) };
}

/** Runs `argv` `times` times, two at a time, and returns every ending that was not `code`. */
async function endings(argv: readonly string[], times: number, code: number): Promise<Ending[]> {
  const wrong: Ending[] = [];
  let started = 0;
  const lane = async (): Promise<void> => {
    while (started < times) {
      started++;
      const ending = await run(argv);
      if (ending.code !== code || ending.signal !== null) wrong.push(ending);
    }
  };
  await Promise.all([lane(), lane()]);
  return wrong;
}

const RUNTIMES = { deno: [DENO, 'run', '-A'], bun: [process.execPath] } as const;
// Deno is where the crash was; Bun runs the same set fewer times.
const TIMES = { deno: 20, bun: 6 } as const;

describe('under CPU load, a process with runtime threads ends with its own status', () => {
  for (const [runtime, launcher] of Object.entries(RUNTIMES) as [keyof typeof RUNTIMES, readonly string[]][]) {
    const times = TIMES[runtime];
    test(`${runtime}: an unawaited link call, then the process ends by itself (${times} runs)`, async () => {
      expect(await endings([...launcher, UNAWAITED], times, 0)).toEqual([]);
    }, 600_000);

    test(`${runtime}: process.exit while the call runs, and a pool closed after the answer (${times / 2} runs each)`, async () => {
      expect(await endings([...launcher, UNAWAITED, '--exit', '3'], times / 2, 3)).toEqual([]);
      expect(await endings([...launcher, UNAWAITED, '--close'], times / 2, 0)).toEqual([]);
    }, 600_000);

    for (const how of ['end', 'exit', 'close'] as const) {
      test(`${runtime}: link/unlink churn through pools opened and closed, then ${how} (3 runs)`, async () => {
        expect(await endings([...launcher, CHURN, how], 3, 0)).toEqual([]);
      }, 600_000);
    }
  }
});
