/**
 * What the Deno suite's files share: the repository's paths, pdlink commands started on Deno (the
 * process running the suite) and a simulated cluster whose Coordinator runs on Deno. Node's
 * child_process works the same on Deno, so the suite reuses the simulator's process helpers; the
 * documentation's code blocks come from ../support/docs.ts, as in the Bun suite.
 */
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { SimCluster } from '../../src/sim/cluster/cluster.ts';
import type { SimClusterOptions } from '../../src/sim/cluster/cluster-options.ts';
import { spawnListening, type ManagedProcess } from '../../src/sim/cluster/process.ts';

export const REPO_ROOT = join(import.meta.dirname!, '..', '..');
const MAIN = join(REPO_ROOT, 'src', 'main.ts');

/** `deno run -A src/main.ts`, the pdlink command on Deno. */
export const PDLINK_ON_DENO: readonly string[] = [process.execPath, 'run', '-A', MAIN];

/**
 * Starts `pdlink <args>` on Deno and resolves once each of `listeners` printed its line.
 * @example const coordinator = await startOnDeno('coordinator', ['coordinator', '--manage_port', '0', '--predict_port', '0'], ['management', 'inference']);
 */
export function startOnDeno(name: string, args: readonly string[], listeners: readonly string[]): Promise<ManagedProcess> {
  return spawnListening({ name, command: [...PDLINK_ON_DENO, ...args], listeners, cwd: REPO_ROOT });
}

/**
 * Runs `pdlink <args>` on Deno to its end: its exit code and everything it printed. A command
 * expected to stop at start that serves instead is killed once it prints a listening line (or
 * after `deadlineMs`), so the test fails on its exit code instead of waiting forever.
 * @example const { code, output } = await runOnDeno(['coordinator', '--config', bad]);
 */
export function runOnDeno(args: readonly string[], deadlineMs = 60_000): Promise<{ code: number | string; output: string }> {
  const child = spawn(PDLINK_ON_DENO[0]!, [...PDLINK_ON_DENO.slice(1), ...args], { cwd: REPO_ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  const kill = (): void => {
    if (child.exitCode === null && child.signalCode === null) process.kill(child.pid!, 'SIGKILL');
  };
  const timer = setTimeout(kill, deadlineMs);
  const onData = (chunk: Uint8Array): void => {
    output += new TextDecoder().decode(chunk);
    if (/ listening on /.test(output)) kill();
  };
  child.stdout!.on('data', onData);
  child.stderr!.on('data', onData);
  return new Promise((resolve) =>
    child.once('close', (code, signal) => {
      clearTimeout(timer);
      resolve({ code: code ?? signal ?? 'unknown', output });
    }),
  );
}

/**
 * One prefill and one decode engine simulator (on Bun unless told otherwise) behind a Coordinator
 * started by the CLI on Deno, wired and refreshed.
 * @example const cluster = await denoCluster(); try { ... } finally { await cluster.stop(); }
 */
export function denoCluster(options: Partial<SimClusterOptions> = {}): Promise<SimCluster> {
  return SimCluster.start({ prefill: 1, decode: 1, ...options, platforms: { coordinator: 'deno', engines: 'bun', ...options.platforms } });
}

/**
 * A completion request body for the simulated model.
 * @example await fetch(url, completion('hello', { stream: true }))
 */
export function completion(prompt: string, extra: Record<string, unknown> = {}): RequestInit {
  return {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'pdlink-sim', prompt, max_tokens: 8, ...extra }),
  };
}
