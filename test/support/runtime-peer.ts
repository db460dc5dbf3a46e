/**
 * A device-runtime peer in its own process (test/fixtures/runtime/peer.ts), driven by JSON lines:
 * the client side the multi-process runtime tests share, on Bun and on Deno (the peer runs on the
 * runtime of the test that starts it).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';

const FIXTURE = fileURLToPath(new URL('../fixtures/runtime/peer.ts', import.meta.url));
/** Deno needs its `run` command and the permissions the runtime library and sockets take. */
const RUN_ARGS = 'Deno' in globalThis ? ['run', '-A', FIXTURE] : [FIXTURE];

export type Reply = Record<string, unknown> & { ok: boolean; code?: number | null };

export class Peer {
  readonly child: ChildProcess;
  readonly exited: Promise<void>;
  #seq = 0;
  #waiting = new Map<number, (reply: Reply) => void>();
  #stderr = '';

  constructor() {
    this.child = spawn(process.execPath, RUN_ARGS, { stdio: ['pipe', 'pipe', 'pipe'] });
    this.exited = new Promise((resolve) => this.child.once('exit', () => resolve()));
    this.child.stderr!.on('data', (chunk: Buffer) => (this.#stderr += chunk.toString()));
    createInterface({ input: this.child.stdout! }).on('line', (line) => {
      const reply = JSON.parse(line) as Reply & { seq: number };
      this.#waiting.get(reply.seq)?.(reply);
      this.#waiting.delete(reply.seq);
    });
  }

  get pid(): number {
    return this.child.pid!;
  }

  /** Sends one command and resolves with its reply, or rejects after a generous deadline. */
  call(op: string, args: Record<string, unknown> = {}, deadlineMs = 20_000): Promise<Reply> {
    const seq = ++this.#seq;
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`${op}: no reply within ${deadlineMs} ms\n${this.#stderr}`)), deadlineMs);
      this.#waiting.set(seq, (reply) => {
        clearTimeout(timer);
        resolve(reply);
      });
      this.child.stdin!.write(`${JSON.stringify({ seq, op, ...args })}\n`);
    });
  }

  /** Like call, but fails the test on an error reply. */
  async ok(op: string, args: Record<string, unknown> = {}): Promise<Reply> {
    const reply = await this.call(op, args);
    if (!reply.ok) throw new Error(`${op} failed: ${String(reply['message'])}\n${this.#stderr}`);
    return reply;
  }

  async kill(): Promise<void> {
    if (this.child.exitCode === null && this.child.signalCode === null) this.child.kill('SIGKILL');
    await this.exited;
  }
}
