/**
 * A process told to stop never survives: a close that hangs is ended by a second signal or by the
 * close bound, with status 1 and a line saying why. A repeat of the first signal within the repeat
 * window (one Ctrl-C that npm forwards as well) is the same request: closing goes on.
 */
import { describe, expect, test } from 'bun:test';
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { REPO_ROOT } from './support/child.ts';

const FIXTURE = join(REPO_ROOT, 'test', 'fixtures', 'cli', 'hung-close.ts');

function start(boundMs: number, repeatWindowMs = 0) {
  const child = spawn(process.execPath, [FIXTURE, String(boundMs), String(repeatWindowMs)], { stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  const waiters: { pattern: string; resolve: () => void }[] = [];
  const onData = (chunk: Buffer): void => {
    out += chunk.toString();
    for (const w of waiters.filter((w) => out.includes(w.pattern))) {
      waiters.splice(waiters.indexOf(w), 1);
      w.resolve();
    }
  };
  child.stdout.on('data', onData);
  child.stderr.on('data', onData);
  const exited = new Promise<number | string>((resolve) => child.once('exit', (code, signal) => resolve(code ?? signal ?? 'unknown')));
  const printed = (pattern: string) =>
    out.includes(pattern) ? Promise.resolve() : new Promise<void>((resolve) => waiters.push({ pattern, resolve }));
  return { child, exited, printed, output: () => out };
}

describe('a close that hangs', () => {
  test('a second signal ends it with status 1', async () => {
    const p = start(600_000);
    await p.printed('ready');
    p.child.kill('SIGTERM');
    await p.printed('closing');
    p.child.kill('SIGINT');
    expect(await p.exited).toBe(1);
    expect(p.output()).toContain('SIGINT while closing');
  });

  test('the close bound ends it with status 1', async () => {
    const p = start(100);
    await p.printed('ready');
    p.child.kill('SIGTERM');
    expect(await p.exited).toBe(1);
    expect(p.output()).toContain('did not close within 100 ms of SIGTERM');
  });

  test('a repeat of the first signal within the window is the same request: closing goes on to its bound', async () => {
    const p = start(1000, 600_000);
    await p.printed('ready');
    p.child.kill('SIGINT');
    await p.printed('closing');
    p.child.kill('SIGINT');
    expect(await p.exited).toBe(1);
    expect(p.output()).toContain('did not close within 1000 ms of SIGINT');
    expect(p.output()).not.toContain('while closing');
  });

  test('another signal within the window still ends it at once', async () => {
    const p = start(600_000, 600_000);
    await p.printed('ready');
    p.child.kill('SIGINT');
    await p.printed('closing');
    p.child.kill('SIGTERM');
    expect(await p.exited).toBe(1);
    expect(p.output()).toContain('SIGTERM while closing');
  });
});
