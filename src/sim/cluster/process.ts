/**
 * Child processes of a simulated cluster: spawned with Bun, ready once they print their
 * `pdlink: <name> listening on <url>` lines, stopped with SIGTERM (then SIGKILL after a deadline).
 */
import { spawn, type ChildProcess } from 'node:child_process';

export interface ManagedProcess {
  readonly name: string;
  readonly child: ChildProcess;
  /** Listener name → URL, from the listening lines. */
  readonly urls: Record<string, string>;
  /** Everything printed so far (stdout and stderr). */
  output(): string;
  /** Resolves with the exit code or signal name once the process has exited. */
  readonly exited: Promise<number | string>;
  readonly running: () => boolean;
  /** Sends `signal` (SIGTERM by default), SIGKILL after `graceMs`; resolves once it has exited. */
  stop(signal?: NodeJS.Signals, graceMs?: number): Promise<number | string>;
}

export interface SpawnOptions {
  readonly name: string;
  readonly command: readonly string[];
  readonly listeners: readonly string[];
  readonly env?: Record<string, string>;
  readonly cwd?: string;
  /** Upper bound for start-up. */
  readonly deadlineMs?: number;
  /** Each output line, prefixed with the process name (for verbose harnesses). */
  readonly onLine?: (line: string) => void;
}

/**
 * Spawns a process and resolves once every listener has printed its line; rejects (after killing
 * it) when it exits first or misses the deadline, with its output in the message.
 * @example const p = await spawnListening({ name: 'p0', command: [process.execPath, 'src/cli/sim-engine.ts', ...], listeners: ['inference'] });
 */
export async function spawnListening(options: SpawnOptions): Promise<ManagedProcess> {
  const [file, ...args] = options.command;
  const child = spawn(file!, args, {
    cwd: options.cwd,
    env: { ...process.env, ...options.env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let partial = '';
  const urls: Record<string, string> = {};
  const exited = new Promise<number | string>((resolve) => {
    child.once('exit', (code, signal) => resolve(code ?? signal ?? 'unknown'));
  });
  const running = (): boolean => child.exitCode === null && child.signalCode === null;
  // By pid rather than child.kill(): on Deno, a child signalled through kill() is reported as killed
  // by the signal even when it handled it and exited 0, which would hide a clean shutdown.
  const send = (signal: NodeJS.Signals): void => {
    try {
      process.kill(child.pid!, signal);
    } catch {
      // Already gone.
    }
  };
  const onText = (chunk: Buffer): void => {
    const text = chunk.toString();
    out += text;
    partial += text;
    const lines = partial.split('\n');
    partial = lines.pop()!;
    for (const line of lines) {
      const match = /^pdlink: (\S+) listening on (\S+)$/.exec(line);
      if (match) urls[match[1]!] = match[2]!;
      options.onLine?.(`[${options.name}] ${line}`);
    }
  };
  child.stdout!.on('data', onText);
  child.stderr!.on('data', onText);
  const handle: ManagedProcess = {
    name: options.name,
    child,
    urls,
    output: () => out,
    exited,
    running,
    async stop(signal = 'SIGTERM', graceMs = 10_000) {
      if (running()) send(signal);
      const timer = setTimeout(() => {
        if (running()) send('SIGKILL');
      }, graceMs);
      try {
        return await exited;
      } finally {
        clearTimeout(timer);
      }
    },
  };
  const deadlineMs = options.deadlineMs ?? 30_000;
  try {
    await new Promise<void>((resolve, reject) => {
      const check = (): void => {
        if (options.listeners.every((n) => urls[n] !== undefined)) resolve();
      };
      child.stdout!.on('data', check);
      check();
      exited.then((code) => reject(new Error(`${options.name} exited (${code}) before listening:\n${out}`)));
      setTimeout(() => reject(new Error(`${options.name} did not listen within ${deadlineMs} ms:\n${out}`)), deadlineMs).unref();
    });
  } catch (err) {
    await handle.stop('SIGKILL');
    throw err;
  }
  return handle;
}

/**
 * Polls `probe` until it returns a value other than undefined, failing after `deadlineMs`
 * with the last reason `describe` gives.
 * @example await until(async () => (await status()).ready || undefined, 20_000, () => 'not ready');
 */
export async function until<T>(
  probe: () => Promise<T | undefined>,
  deadlineMs: number,
  describe: () => string,
  intervalMs = 25,
): Promise<T> {
  const deadline = Date.now() + deadlineMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`gave up after ${deadlineMs} ms: ${describe()}`);
    await new Promise((resolve) => setTimeout(resolve, intervalMs));
  }
}
