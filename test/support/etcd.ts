/**
 * A real etcd for the HA tests: Debian's `etcd-server` on loopback ports with a temporary data
 * dir, installed by scripts/ensure-etcd.mjs when missing. It can be stopped (kill -9 included) and
 * started again on the same ports and data, so a test can take the store away and give it back.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { until } from '../../src/sim/process.ts';
import { REPO_ROOT } from './child.ts';

function etcdBinary(): string {
  let found = Bun.which('etcd');
  if (found === null) {
    // One place installs it (as root) or says what to install.
    const run = spawnSync('node', [join(REPO_ROOT, 'scripts', 'ensure-etcd.mjs')], { encoding: 'utf8' });
    found = Bun.which('etcd');
    if (found === null) throw new Error(run.stderr.trim() || 'etcd is missing: install it with `apt-get install -y etcd-server`');
  }
  return found;
}

export class TestEtcd {
  readonly endpoint: string;
  readonly #binary: string;
  readonly #dir: string;
  readonly #clientPort: number;
  readonly #peerPort: number;
  #child: ChildProcess | undefined;
  #output = '';

  private constructor(binary: string, dir: string, clientPort: number, peerPort: number) {
    this.#binary = binary;
    this.#dir = dir;
    this.#clientPort = clientPort;
    this.#peerPort = peerPort;
    this.endpoint = `http://127.0.0.1:${clientPort}`;
  }

  /**
   * Starts an etcd on free loopback ports; retries with other ports if a pair was taken.
   * @example const etcd = await TestEtcd.start(); ...; await etcd.destroy();
   */
  static async start(): Promise<TestEtcd> {
    const binary = etcdBinary();
    let lastError: unknown;
    for (let attempt = 0; attempt < 5; attempt++) {
      const clientPort = 30_000 + Math.floor(Math.random() * 15_000) * 2;
      const etcd = new TestEtcd(binary, mkdtempSync(join(tmpdir(), 'pdlink-etcd-')), clientPort, clientPort + 1);
      try {
        await etcd.resume();
        return etcd;
      } catch (err) {
        lastError = err;
        await etcd.destroy();
      }
    }
    throw lastError;
  }

  get running(): boolean {
    return this.#child !== undefined && this.#child.exitCode === null && this.#child.signalCode === null;
  }

  /** Starts (again) on the same ports and data dir; resolves once it answers its health check. */
  async resume(): Promise<void> {
    if (this.running) return;
    const peer = `http://127.0.0.1:${this.#peerPort}`;
    const child = spawn(
      this.#binary,
      [
        '--name',
        'pdlink-test',
        '--data-dir',
        this.#dir,
        '--listen-client-urls',
        this.endpoint,
        '--advertise-client-urls',
        this.endpoint,
        '--listen-peer-urls',
        peer,
        '--initial-advertise-peer-urls',
        peer,
        '--initial-cluster',
        `pdlink-test=${peer}`,
        '--log-level',
        'warn',
      ],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    );
    this.#child = child;
    const keep = (chunk: Buffer): void => {
      this.#output = (this.#output + chunk.toString()).slice(-20_000);
    };
    child.stdout!.on('data', keep);
    child.stderr!.on('data', keep);
    await until(
      async () => {
        if (!this.running) throw new Error(`etcd exited:\n${this.#output}`);
        const ok = await fetch(`${this.endpoint}/health`, { signal: AbortSignal.timeout(1000) })
          .then((r) => r.ok)
          .catch(() => false);
        return ok ? true : undefined;
      },
      20_000,
      () => `etcd did not answer /health on ${this.endpoint}:\n${this.#output}`,
    );
  }

  /** Stops it (SIGKILL by default: the store vanishes as in a crash); data stays for resume(). */
  async stop(signal: NodeJS.Signals = 'SIGKILL'): Promise<void> {
    const child = this.#child;
    if (child === undefined || !this.running) return;
    const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
    child.kill(signal);
    await exited;
  }

  async destroy(): Promise<void> {
    await this.stop();
    rmSync(this.#dir, { recursive: true, force: true });
  }
}
