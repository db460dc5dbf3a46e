/**
 * Progress while a benchmark runs: a bar on a terminal (cli-progress), and plain lines when the
 * output is not a terminal (a CI log, a pipe, a test waiting for requests to end), one per
 * request while runs are small and one per percent when they are large.
 */
import cliProgress from 'cli-progress';
import type { RequestRecord } from './client.ts';

export interface Progress {
  /** A run of `total` requests starts. */
  start(label: string, total: number): void;
  /** One request of the run ended. */
  record(record: RequestRecord): void;
  /** The run ended. */
  stop(): void;
}

/**
 * A bar when `stream` is a terminal, else lines `pdlink bench: <label> <done>/<total> requests done (<failed> failed)`.
 * @example const progress = progressFor(process.stderr);
 */
export function progressFor(stream: NodeJS.WriteStream): Progress {
  return stream.isTTY ? new BarProgress(stream) : new LineProgress(stream);
}

class BarProgress implements Progress {
  readonly #bar: cliProgress.SingleBar;
  #failed = 0;
  #done = 0;

  constructor(stream: NodeJS.WriteStream) {
    this.#bar = new cliProgress.SingleBar(
      { stream, format: '{label} [{bar}] {value}/{total} requests | {failed} failed | {eta_formatted} left', hideCursor: true },
      cliProgress.Presets.shades_classic,
    );
  }

  start(label: string, total: number): void {
    this.#failed = 0;
    this.#done = 0;
    this.#bar.start(total, 0, { label, failed: 0 });
  }

  record(record: RequestRecord): void {
    if (record.outcome === 'error') this.#failed++;
    this.#bar.update(++this.#done, { failed: this.#failed });
  }

  stop(): void {
    this.#bar.stop();
  }
}

class LineProgress implements Progress {
  readonly #stream: NodeJS.WriteStream;
  #label = '';
  #total = 0;
  #done = 0;
  #failed = 0;
  #step = 1;

  constructor(stream: NodeJS.WriteStream) {
    this.#stream = stream;
  }

  start(label: string, total: number): void {
    this.#label = label;
    this.#total = total;
    this.#done = 0;
    this.#failed = 0;
    this.#step = Math.max(1, Math.floor(total / 100));
  }

  record(record: RequestRecord): void {
    this.#done++;
    if (record.outcome === 'error') this.#failed++;
    if (this.#done % this.#step === 0 || this.#done === this.#total) {
      this.#stream.write(`pdlink bench: ${this.#label} ${this.#done}/${this.#total} requests done (${this.#failed} failed)\n`);
    }
  }

  stop(): void {}
}
