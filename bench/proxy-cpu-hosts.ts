/**
 * The processes of the proxy CPU benchmark: each started on Bun, pinned (proxies on one core, the
 * engines on the other), found by its listening lines, its stderr kept in a file for JSC's GC log;
 * and pdlink's Coordinator given a P and a D in front of the fake engines.
 */
import { closeSync, mkdtempSync, openSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { MODEL } from './proxy-cpu-client.ts';
import { pinned } from './proxy-cpu-proc.ts';
import { launchEnv } from '../src/platform/launch-env.ts';

export const PROXY_CPU = '1';
export const ENGINE_CPU = '0';
export const GC_LOG = { BUN_JSC_logGC: '1' };

let procSeq = 0;
export const dir = mkdtempSync(join(tmpdir(), 'pdlink-proxy-cpu-'));

/** A process of the bench: its listeners (from its `pdlink: <name> listening on <url>` lines) and its stderr, kept in a file (JSC's GC log goes there). */
export interface Proc {
  readonly pid: number;
  readonly urls: Record<string, string>;
  stderr(): string;
  stop(): Promise<void>;
}

export async function startBun(
  name: string,
  script: string,
  args: string[],
  listeners: string[],
  env: Record<string, string> = {},
): Promise<Proc> {
  const errPath = join(dir, `${name}-${procSeq++}.err`);
  const errFd = openSync(errPath, 'w');
  const child = Bun.spawn(
    pinned(name === 'engines' ? ENGINE_CPU : PROXY_CPU, [process.execPath, resolve(import.meta.dir, script), ...args]),
    {
      stdout: 'pipe',
      stderr: errFd,
      env: { ...process.env, BUN_CONFIG_MAX_HTTP_REQUESTS: '65535', ...env },
    },
  );
  closeSync(errFd);
  const urls: Record<string, string> = {};
  const reader = child.stdout.getReader();
  const decoder = new TextDecoder();
  let out = '';
  const deadline = setTimeout(() => child.kill(), 30_000);
  while (!listeners.every((n) => urls[n] !== undefined)) {
    const { done, value } = await reader.read();
    if (done) throw new Error(`${name} exited before listening: ${out}${readFileSync(errPath, 'utf8').slice(-2000)}`);
    out += decoder.decode(value);
    for (const m of out.matchAll(/^pdlink: (\S+) listening on (\S+)$/gm)) urls[m[1]!] = m[2]!;
  }
  clearTimeout(deadline);
  // Keep reading so the child never blocks on a full pipe.
  void (async () => {
    while (!(await reader.read()).done);
  })().catch(() => {});
  return {
    pid: child.pid,
    urls,
    stderr: () => readFileSync(errPath, 'utf8'),
    stop: async () => {
      child.kill();
      await child.exited;
    },
  };
}

export interface Host {
  readonly proc: Proc;
  readonly url: string;
  gc(): Promise<void>;
}

export function hostOf(proc: Proc, listener: string): Host {
  return {
    proc,
    url: proc.urls[listener]!,
    gc: async () => void (await (await fetch(proc.urls['control']!, { method: 'POST' })).text()),
  };
}

/**
 * pdlink's Coordinator in front of `engines`; `script` may name another checkout's host script (an
 * A/B of two versions). `gcLog` turns on JSC's GC log, for the garbage measurement only: the log is
 * written a few bytes per call, a hundred calls or so per collection, and counts as the process's CPU.
 * `file` is the Coordinator's configuration file (default: empty, every default).
 */
export async function startPdlink(
  engines: Proc,
  script = 'proxy-pdlink-host.ts',
  gcLog = false,
  file: Record<string, unknown> = {},
): Promise<Host> {
  const config = join(dir, `ms_coordinator-${procSeq}.json`);
  writeFileSync(config, JSON.stringify(file));
  const proc = await startBun(
    'pdlink',
    script,
    ['--config', config, '--manage_ip', '127.0.0.1', '--manage_port', '0', '--predict_ip', '127.0.0.1', '--predict_port', '0'],
    ['management', 'inference', 'control'],
    // The Coordinator runs with the settings its launcher gives it (bin/pdlink); the bare proxies with Bun's own.
    { ...launchEnv(), ...(gcLog ? GC_LOG : {}) },
  );
  const instance = (id: number, url: string, role: number, label: number, peers: number[]) => ({
    id,
    ip: '127.0.0.1',
    port: new URL(url).port,
    metric_port: new URL(url).port,
    model_name: MODEL,
    static_info: {
      group_id: 0,
      max_seq_len: 4096,
      max_output_len: 1024,
      total_slots_num: 5000,
      total_block_num: 1000000,
      block_size: 16,
      label,
      role,
    },
    dynamic_info: { avail_slots_num: 5000, avail_block_num: 1000000, peers },
  });
  const res = await fetch(`${proc.urls['management']}/v1/instances/refresh`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({
      ids: [0, 1],
      instances: [instance(0, engines.urls['prefill']!, 80, 2, [1]), instance(1, engines.urls['decode']!, 68, 3, [0])],
    }),
  });
  if (res.status !== 200) throw new Error(`refresh answered ${res.status}: ${await res.text()}`);
  return hostOf(proc, 'inference');
}
