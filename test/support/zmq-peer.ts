/**
 * A real libzmq KV-event publisher for tests (test/fixtures/kv/kv_publisher.py on Debian's
 * python3-zmq), installed by scripts/ensure-zmq-peer.mjs when missing. Commands go in as JSON lines;
 * answers and events (a subscriber subscribed, a replay was served) come back as JSON lines, and a
 * test waits for them instead of for time.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { createInterface } from 'node:readline';
import { join } from 'node:path';

/** Resolved here rather than from child.ts, so the Deno suite can use the peer too. */
const REPO_ROOT = join(import.meta.dirname!, '..', '..');

const PYTHON = '/usr/bin/python3';
const SCRIPT = join(REPO_ROOT, 'test', 'fixtures', 'kv', 'kv_publisher.py');

function ensurePeer(): void {
  if (spawnSync(PYTHON, ['-c', 'import zmq, msgpack, xxhash']).status === 0) return;
  const run = spawnSync('node', [join(REPO_ROOT, 'scripts', 'ensure-zmq-peer.mjs')], { encoding: 'utf8' });
  if (spawnSync(PYTHON, ['-c', 'import zmq, msgpack, xxhash']).status !== 0)
    throw new Error(run.stderr.trim() || 'python3-zmq, python3-msgpack and python3-xxhash are missing: apt-get install them');
}

type Line = Record<string, unknown>;

export class ZmqPeer {
  readonly pubEndpoint: string;
  readonly replayEndpoint: string;
  readonly #child: ChildProcess;
  readonly #answers: ((line: Line) => void)[] = [];
  readonly #events: Line[] = [];
  readonly #eventWaiters: { match: (l: Line) => boolean; resolve: (l: Line) => void }[] = [];

  private constructor(child: ChildProcess, ports: Line) {
    this.#child = child;
    this.pubEndpoint = `tcp://127.0.0.1:${ports['pub'] as number}`;
    this.replayEndpoint = `tcp://127.0.0.1:${ports['replay'] as number}`;
  }

  /**
   * Starts the publisher.
   * @example const peer = await ZmqPeer.start(); ...; peer.stop();
   */
  static async start(): Promise<ZmqPeer> {
    ensurePeer();
    const child = spawn(PYTHON, [SCRIPT], { stdio: ['pipe', 'pipe', 'inherit'] });
    const lines = createInterface({ input: child.stdout! });
    let peer: ZmqPeer | undefined;
    const first = new Promise<Line>((resolve, reject) => {
      child.once('exit', (code) => reject(new Error(`kv_publisher.py exited with ${code}`)));
      lines.on('line', (text) => {
        const line = JSON.parse(text) as Line;
        if (peer === undefined) resolve(line);
        else peer.#line(line);
      });
    });
    peer = new ZmqPeer(child, await first);
    return peer;
  }

  /** Sends a command and resolves with its answer. */
  command(cmd: Line): Promise<Line> {
    return new Promise((resolve) => {
      this.#answers.push(resolve);
      this.#child.stdin!.write(`${JSON.stringify(cmd)}\n`);
    });
  }

  /** Resolves with the next event of that name (one already seen and not yet taken counts). */
  nextEvent(name: string): Promise<Line> {
    const match = (l: Line): boolean => l['event'] === name;
    const at = this.#events.findIndex(match);
    if (at >= 0) return Promise.resolve(this.#events.splice(at, 1)[0]!);
    return new Promise((resolve) => this.#eventWaiters.push({ match, resolve }));
  }

  /** Publishes a vLLM batch built from a compact description (see kv_publisher.py `build`). */
  async vllm(cmd: Omit<Line, 'op'>): Promise<number> {
    return (await this.command({ op: 'vllm', ...cmd }))['seq'] as number;
  }

  stop(): void {
    this.#child.kill('SIGKILL');
  }

  #line(line: Line): void {
    if ('event' in line) {
      const at = this.#eventWaiters.findIndex((w) => w.match(line));
      if (at >= 0) this.#eventWaiters.splice(at, 1)[0]!.resolve(line);
      else this.#events.push(line);
      return;
    }
    this.#answers.shift()?.(line);
  }
}
