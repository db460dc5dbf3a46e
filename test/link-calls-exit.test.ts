/**
 * Link calls on the runtime's threads and the life of the process: a call nobody awaits keeps the
 * process alive until its answer, which then lets it end by itself; a process that exits with calls
 * still running exits with its own status. On Bun and on Deno (their thread-safe callbacks differ).
 */
import { describe, expect, test } from 'bun:test';
import { fileURLToPath } from 'node:url';
import { LLM_STATUS as S } from '../src/core/llm-status.ts';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const FIXTURE = 'test/fixtures/links/unawaited-link.ts';
const RUNTIMES = {
  bun: [process.execPath, FIXTURE],
  deno: [`${ROOT}node_modules/.bin/deno`, 'run', '-A', FIXTURE],
} as const;

/** Runs the fixture; a process still running after 15 s is killed (and its status says so). */
async function run(argv: readonly string[]): Promise<{ code: number; out: string; err: string }> {
  const child = Bun.spawn([...argv], { cwd: ROOT, stdout: 'pipe', stderr: 'pipe', env: { ...process.env, NO_COLOR: '1' } });
  const killer = setTimeout(() => child.kill('SIGKILL'), 15_000);
  void child.exited.then(() => clearTimeout(killer));
  const [out, err, code] = await Promise.all([new Response(child.stdout).text(), new Response(child.stderr).text(), child.exited]);
  return { code, out, err };
}

describe('a link call nobody awaits', () => {
  for (const [runtime, argv] of Object.entries(RUNTIMES)) {
    test(`${runtime}: keeps the process alive until it is answered, then the process ends by itself`, async () => {
      const { code, out, err } = await run(argv);
      expect({ code, err: code === 0 ? '' : err }).toEqual({ code: 0, err: '' });
      expect(JSON.parse(out)).toEqual({
        reply: { ok: true, value: { rc: S.LLM_FAILED, rets: [S.LLM_TIMEOUT] } },
        linkThreads: 'native',
      });
    }, 30_000);

    test(`${runtime}: the pool closes as soon as the answer has come, and the process ends`, async () => {
      const { code, out, err } = await run([...argv, '--close']);
      expect({ code, err: code === 0 ? '' : err }).toEqual({ code: 0, err: '' });
      expect(JSON.parse(out)).toMatchObject({ linkThreads: 'native' });
    }, 30_000);

    test(`${runtime}: a process that exits while calls run exits with its own status`, async () => {
      const { code } = await run([...argv, '--exit', '3']);
      expect(code).toBe(3);
    }, 30_000);
  }
});
