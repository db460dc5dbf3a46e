/**
 * Starts `pdlink <command>` as a real child process and waits for its listening lines.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';

export const REPO_ROOT = join(import.meta.dir, '..', '..');
const BUN = process.execPath;

export interface PdlinkChild {
  readonly process: ChildProcess;
  /** Listener name → URL, from the `pdlink: <name> listening on <url>` lines. */
  readonly urls: Record<string, string>;
  /** Everything written to stdout and stderr so far. */
  output(): string;
  /** Resolves with the exit code (or signal name) once the process has exited. */
  readonly exited: Promise<number | string>;
  /** SIGKILL if still running; resolves when it has exited. */
  kill(signal?: NodeJS.Signals): Promise<number | string>;
}

export interface StartOptions {
  env?: Record<string, string>;
  cwd?: string;
  /** Listener names to wait for. */
  listeners: readonly string[];
  /** Upper bound for start-up; a generous deadline, not a timing assertion. */
  deadlineMs?: number;
  /** Also wait until the output so far says this (a line printed after the listeners, e.g. readiness). */
  printed?: string;
}

/**
 * Spawns `bun src/main.ts ...args` and resolves once every expected listener has printed its line.
 * @example const child = await startPdlink(['coordinator', '--manage_port', '0'], { listeners: ['management'] });
 */
export async function startPdlink(args: readonly string[], options: StartOptions): Promise<PdlinkChild> {
  const child = spawn(BUN, [join(REPO_ROOT, 'src', 'main.ts'), ...args], {
    cwd: options.cwd ?? REPO_ROOT,
    env: { ...process.env, ...options.env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  const urls: Record<string, string> = {};
  const exited = new Promise<number | string>((resolve) => {
    child.once('exit', (code, signal) => resolve(code ?? signal ?? 'unknown'));
  });
  const ready = new Promise<void>((resolve, reject) => {
    const onData = (chunk: Buffer): void => {
      out += chunk.toString();
      for (const match of out.matchAll(/^pdlink: (\S+) listening on (\S+)$/gm)) urls[match[1]!] = match[2]!;
      if (options.listeners.every((name) => urls[name] !== undefined) && (options.printed === undefined || out.includes(options.printed)))
        resolve();
    };
    child.stdout!.on('data', onData);
    child.stderr!.on('data', (chunk: Buffer) => {
      out += chunk.toString();
    });
    exited.then((code) => reject(new Error(`pdlink ${args.join(' ')} exited (${code}) before listening:\n${out}`)));
    setTimeout(
      () => reject(new Error(`pdlink ${args.join(' ')} did not listen within ${options.deadlineMs ?? 20000} ms:\n${out}`)),
      options.deadlineMs ?? 20000,
    ).unref();
  });
  const handle: PdlinkChild = {
    process: child,
    urls,
    output: () => out,
    exited,
    async kill(signal = 'SIGKILL') {
      if (child.exitCode === null && child.signalCode === null) child.kill(signal);
      return exited;
    },
  };
  try {
    await ready;
  } catch (err) {
    await handle.kill();
    throw err;
  }
  return handle;
}

/**
 * Runs `bun src/main.ts ...args` to completion (for commands that fail fast) and returns its output.
 * @example const { code, stderr } = await runPdlink(['coordinator', '--config', 'bad.json']);
 */
export async function runPdlink(args: readonly string[], options: { env?: Record<string, string>; cwd?: string } = {}) {
  const proc = Bun.spawn([BUN, join(REPO_ROOT, 'src', 'main.ts'), ...args], {
    cwd: options.cwd ?? REPO_ROOT,
    env: { ...process.env, ...options.env },
    stdout: 'pipe',
    stderr: 'pipe',
  });
  const [stdout, stderr, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited]);
  return { code, stdout, stderr };
}
