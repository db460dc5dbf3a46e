/**
 * A new user's first hour, run the way the README tells it after `npm install`, with Bun not on
 * the PATH: the README's first-request path (Coordinator, simulated engines, refresh, completion),
 * the `pdlink` binary starting without the fetch-cap warning, and `npm run demo` accounting the KV
 * bytes it pulled in the Coordinator's ledger.
 *
 * The README path is taken from the README itself: its code blocks marked run=coordinator,
 * run=sim-cluster, run=refresh and run=completion are run, with the documented addresses (127.0.0.1,
 * 127.0.0.11, 127.0.0.12) replaced by fresh loopback addresses so the test never collides with a
 * Coordinator already running on the defaults; docs/getting-started.md shows the same blocks.
 */
import { describe, expect, test } from 'bun:test';
import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, dirname, join } from 'node:path';
import { until } from '../src/sim/cluster/process.ts';
import { REPO_ROOT } from './support/child.ts';
import { docBlock } from './support/docs.ts';

const WARNING = 'BUN_CONFIG_MAX_HTTP_REQUESTS';

/** The PATH of a user's shell: node and npm, system tools, no node_modules/.bin (so no bun). */
function userPath(): string {
  const nodeDir = dirname(process.execPath.endsWith('bun') || process.execPath.endsWith('bun.exe') ? whichNode() : process.execPath);
  const entries = (process.env['PATH'] ?? '').split(delimiter).filter((p) => p !== '' && !p.includes('node_modules'));
  return [nodeDir, ...entries].join(delimiter);
}

function whichNode(): string {
  for (const dir of (process.env['PATH'] ?? '').split(delimiter)) {
    const candidate = join(dir, 'node');
    if (!dir.includes('node_modules') && Bun.file(candidate).size > 0) return candidate;
  }
  throw new Error('node is not on the PATH');
}

function userEnv(): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(process.env)) if (v !== undefined && !k.startsWith('npm_') && k !== WARNING) env[k] = v;
  env['PATH'] = userPath();
  return env;
}

function loopback(last: number): string {
  return `127.${100 + Math.floor(Math.random() * 100)}.${Math.floor(Math.random() * 256)}.${last}`;
}

interface Started {
  readonly child: ChildProcess;
  output(): string;
  readonly exited: Promise<number | string>;
}

/** Spawns a command in its own process group (so it and everything it starts can be signalled). */
function start(command: readonly string[], cwd = REPO_ROOT): Started {
  const child = spawn(command[0]!, command.slice(1), { cwd, env: userEnv(), stdio: ['ignore', 'pipe', 'pipe'], detached: true });
  let out = '';
  child.stdout!.on('data', (chunk: Buffer) => (out += chunk.toString()));
  child.stderr!.on('data', (chunk: Buffer) => (out += chunk.toString()));
  const exited = new Promise<number | string>((resolve) => child.once('exit', (code, signal) => resolve(code ?? signal ?? 'unknown')));
  return { child, output: () => out, exited };
}

async function waitFor(started: Started, pattern: RegExp, what: string): Promise<void> {
  let gone = false;
  void started.exited.then(() => (gone = true));
  await until(
    async () =>
      pattern.test(started.output()) ? true : gone ? Promise.reject(new Error(`${what} exited:\n${started.output()}`)) : undefined,
    60_000,
    () => `${what} did not print ${pattern}:\n${started.output()}`,
  );
}

/**
 * `signal` to the whole group (SIGINT is what a terminal's Ctrl-C sends), then waits for the
 * leader; SIGKILL to the group if it lingers.
 */
async function stopGroup(started: Started, signal: NodeJS.Signals = 'SIGTERM'): Promise<number | string> {
  const pid = started.child.pid!;
  try {
    process.kill(-pid, signal);
  } catch {
    // Already gone.
  }
  const timer = setTimeout(() => {
    try {
      process.kill(-pid, 'SIGKILL');
    } catch {
      // Already gone.
    }
  }, 20_000);
  try {
    return await started.exited;
  } finally {
    clearTimeout(timer);
  }
}

async function run(script: string): Promise<{ code: number; stdout: string; stderr: string }> {
  const proc = Bun.spawn(['sh', '-c', script], { cwd: REPO_ROOT, env: userEnv(), stdout: 'pipe', stderr: 'pipe' });
  const [stdout, stderr, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited]);
  return { code, stdout, stderr };
}

describe("the README's first request", () => {
  test("Getting started shows the README's first request, block for block", () => {
    expect(docBlock('docs/getting-started.md', 'coordinator')).toBe(docBlock('README.md', 'coordinator'));
    expect(docBlock('docs/getting-started.md', 'sim-cluster')).toBe(docBlock('README.md', 'sim-cluster'));
    expect(docBlock('docs/getting-started.md', 'refresh')).toBe(docBlock('README.md', 'refresh'));
    expect(docBlock('docs/getting-started.md', 'completion')).toBe(docBlock('README.md', 'completion'));
  });

  test('npm start, npx pdlink sim-cluster, the refresh and the completion work as written', async () => {
    const coordinatorCmd = docBlock('README.md', 'coordinator').trim();
    const clusterCmd = docBlock('README.md', 'sim-cluster').trim();
    const refresh = docBlock('README.md', 'refresh').trim();
    const completion = docBlock('README.md', 'completion').trim();
    expect(coordinatorCmd).toBe('npm start');
    expect(clusterCmd).toBe('npx pdlink sim-cluster');
    expect(refresh).toStartWith('curl -i -X POST http://127.0.0.1:1026/v1/instances/refresh');
    expect(completion).toStartWith('curl -s http://127.0.0.1:1025/v1/completions');

    const ip = { coordinator: loopback(1), prefill: loopback(11), decode: loopback(12) };
    const local = (text: string): string =>
      text
        .replace(/127\.0\.0\.11(?!\d)/g, ip.prefill)
        .replace(/127\.0\.0\.12(?!\d)/g, ip.decode)
        .replace(/127\.0\.0\.1(?!\d)/g, ip.coordinator);

    const coordinator = start([...coordinatorCmd.split(' '), '--', '--manage_ip', ip.coordinator, '--predict_ip', ip.coordinator]);
    const cluster = start([...clusterCmd.split(' '), '--prefill_ip', ip.prefill, '--decode_ip', ip.decode]);
    try {
      await waitFor(coordinator, /pdlink: inference listening on/, 'npm start');
      await waitFor(cluster, /register them with this refresh body/, 'npx pdlink sim-cluster');

      const registered = await run(local(refresh));
      expect(registered.stdout).toMatch(/^HTTP\/1\.1 200/);

      const answered = await run(local(completion));
      const body = JSON.parse(answered.stdout) as { choices: { text: string }[]; usage: { completion_tokens: number } };
      expect(body.choices[0]!.text.length).toBeGreaterThan(0);
      expect(body.usage.completion_tokens).toBe(8);

      const transfers = (await (await fetch(`http://${ip.coordinator}:1026/v1/transfers`)).json()) as {
        totals: { done: number; bytes_moved: number };
      };
      expect(transfers.totals.done).toBe(1);
      expect(transfers.totals.bytes_moved).toBeGreaterThan(0);
      expect(coordinator.output()).not.toContain(WARNING);
      expect(cluster.output()).not.toContain(WARNING);
      // Ctrl-C in each terminal: npm and npx report the status pdlink exits with, as documented.
      expect(await Promise.all([stopGroup(coordinator, 'SIGINT'), stopGroup(cluster, 'SIGINT')])).toEqual([0, 0]);
      // The engines hear the Ctrl-C once, through sim-cluster, and close in order.
      expect(cluster.output()).not.toContain('while closing');
    } finally {
      await Promise.all([stopGroup(coordinator), stopGroup(cluster)]);
    }
    // Every engine the cluster started has gone with it.
    for (const host of [ip.prefill, ip.decode]) {
      await until(
        async () => ((await fetch(`http://${host}:1026/v2/health/live`).catch(() => null)) === null ? true : undefined),
        20_000,
        () => `an engine still serves on ${host}`,
      );
    }
  });
});

describe('the pdlink binary', () => {
  test("package.json's bin starts with Bun off the PATH, without the fetch-cap warning, and exits 0 on SIGTERM", async () => {
    const pkg = JSON.parse(readFileSync(join(REPO_ROOT, 'package.json'), 'utf8')) as { bin: Record<string, string> };
    const bin = join(REPO_ROOT, pkg.bin['pdlink']!);
    const ip = loopback(1);
    // From another directory, as an installed binary is run.
    const child = start([bin, 'coordinator', '--manage_ip', ip, '--manage_port', '0', '--predict_ip', ip, '--predict_port', '0'], tmpdir());
    try {
      await waitFor(child, /pdlink: inference listening on/, 'pdlink coordinator');
      expect(child.output()).not.toContain(WARNING);
      // The launcher replaced itself with Bun: the process signalled is the server.
      child.child.kill('SIGTERM');
      expect(await child.exited).toBe(0);
    } finally {
      await stopGroup(child);
    }
  });

  test('npx pdlink starts the coordinator without the fetch-cap warning', async () => {
    const ip = loopback(1);
    const child = start([
      'npx',
      'pdlink',
      'coordinator',
      '--manage_ip',
      ip,
      '--manage_port',
      '0',
      '--predict_ip',
      ip,
      '--predict_port',
      '0',
    ]);
    try {
      await waitFor(child, /pdlink: inference listening on/, 'npx pdlink coordinator');
      expect(child.output()).not.toContain(WARNING);
    } finally {
      await stopGroup(child);
    }
  });
});

describe('npm run demo', () => {
  test("the ledger's bytes_moved and blocks_moved are the bytes and blocks the decode engines pulled", async () => {
    const demo = await run('npm run --silent demo');
    expect(demo.code).toBe(0);
    const pulled = [
      ...demo.stdout.matchAll(/^ {2}d\d: \d+ decodes, (\d+) blocks \/ (\d+) KiB pulled and verified, 0 verification failures$/gm),
    ];
    expect(pulled.length).toBe(2);
    const blocks = pulled.reduce((sum, m) => sum + Number(m[1]), 0);
    const kib = pulled.reduce((sum, m) => sum + Number(m[2]), 0);
    const totals = JSON.parse(/coordinator ledger: .* totals (\{.*\})$/m.exec(demo.stdout)![1]!) as {
      bytes_moved: number;
      blocks_moved: number;
    };
    expect(kib).toBeGreaterThan(0);
    // The demo's blocks are 64 KiB, so the KiB figures are exact.
    expect(totals.bytes_moved).toBe(kib * 1024);
    expect(totals.blocks_moved).toBe(blocks);
    expect(demo.stdout + demo.stderr).not.toContain(WARNING);
  });
});
