/**
 * Link calls on the runtime's threads and the life of the process: a call nobody awaits keeps the
 * process alive until its answer, which then lets it end by itself; a process that exits with calls
 * still running exits with its own status. On Bun and on Deno (their thread-safe callbacks differ).
 * And a runtime without the call queue: link calls fall back to worker threads.
 */
import { afterAll, describe, expect, test } from 'bun:test';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { LLM_STATUS as S } from '../src/core/llm-status.ts';
import { buildNoQueueRuntime } from './doubles/no-queue-runtime.ts';

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

describe('a runtime without the call queue', () => {
  const scratch = mkdtempSync(join(tmpdir(), 'pdlink-noqueue-'));
  afterAll(() => rmSync(scratch, { recursive: true, force: true }));

  test('link calls run on worker threads, and the runtime answers them', async () => {
    // Every required symbol, each refusing its call with PARAM_INVALID; no pdrt_calls_*.
    const library = buildNoQueueRuntime(scratch);
    const script = [
      `import { encodeClusters } from './src/workers/encoding.ts';`,
      `import { WorkerPool } from './src/workers/pool.ts';`,
      `const pool = new WorkerPool({ threads: 1 });`,
      `const { batch } = encodeClusters('clone', [{ id: 5n, ip: '127.0.0.2', port: 1, localIp: '', localPort: 0 }]);`,
      `const reply = await pool.run({ op: 'link', handle: 4096, timeoutMs: 1000, deadline: Date.now() + 1000, force: false, batch });`,
      `console.log(JSON.stringify({ reply, linkThreads: pool.linkThreads }));`,
      `await pool.close();`,
    ].join('\n');
    const child = Bun.spawn([process.execPath, '-e', script], {
      cwd: ROOT,
      stdout: 'pipe',
      stderr: 'pipe',
      env: { ...process.env, PDLINK_RUNTIME: library },
    });
    const [out, code] = await Promise.all([new Response(child.stdout).text(), child.exited]);
    expect(code).toBe(0);
    expect(JSON.parse(out)).toEqual({
      reply: { ok: true, value: { rc: S.LLM_PARAM_INVALID, rets: [S.LLM_PARAM_INVALID] } },
      linkThreads: 'workers',
    });
  }, 30_000);
});
