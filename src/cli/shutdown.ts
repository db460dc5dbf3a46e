/**
 * SIGINT/SIGTERM handling for the pdlink commands. The handlers are installed once, when the
 * process starts and before any listener exists, so a signal at any moment after start (even one
 * sent the instant a listening line appears, or while the process is still starting) ends in an
 * orderly close and exit 0 instead of death by the signal. A close that hangs must not leave a
 * process serving after it was told to stop, so a bound ends it with status 1, and so does a
 * second signal. One Ctrl-C may arrive twice, though: the terminal sends it to pdlink directly and
 * npm, when pdlink runs under `npm start` or `npx`, forwards its own copy at once; a repeat of the
 * first signal within a short window is that same request, not a second one.
 */

/** How long closing may take after a signal before the process exits anyway. */
export const CLOSE_BOUND_MS = 15_000;
/** A repeat of the first signal this soon after it is the same stop request delivered twice (npm forwards it). */
export const REPEAT_WINDOW_MS = 500;

let installed: Shutdown | undefined;

export class Shutdown {
  #signal: NodeJS.Signals | undefined;
  readonly #waiters: (() => void)[] = [];

  /**
   * Installs the handlers; `closeBoundMs` is how long closing may take after the first signal,
   * `repeatWindowMs` how soon a repeat of it counts as the same request.
   * @example const shutdown = new Shutdown(); // or shutdownSignals() for the process-wide one
   */
  constructor(closeBoundMs = CLOSE_BOUND_MS, repeatWindowMs = REPEAT_WINDOW_MS) {
    let firstAt = 0;
    const onSignal = (signal: NodeJS.Signals): void => {
      if (this.#signal === signal && performance.now() - firstAt < repeatWindowMs) return;
      if (this.#signal !== undefined) {
        // A second signal while closing: the operator wants it gone now.
        console.error(`pdlink: ${signal} while closing, exiting at once`);
        process.exit(1);
      }
      this.#signal = signal;
      firstAt = performance.now();
      setTimeout(() => {
        console.error(`pdlink: did not close within ${closeBoundMs} ms of ${signal}, exiting`);
        process.exit(1);
      }, closeBoundMs).unref();
      for (const wake of this.#waiters.splice(0)) wake();
    };
    process.on('SIGINT', onSignal);
    process.on('SIGTERM', onSignal);
  }

  /** The signal received, if any. */
  get signal(): NodeJS.Signals | undefined {
    return this.#signal;
  }

  /**
   * Resolves once a signal has arrived (at once if one already has).
   * @example await shutdownSignals().received();
   */
  received(): Promise<void> {
    if (this.#signal !== undefined) return Promise.resolve();
    return new Promise((resolve) => this.#waiters.push(resolve));
  }
}

/**
 * The process's signal handling, installed on the first call; every later call returns the same one.
 * @example const shutdown = shutdownSignals(); // first thing in main
 */
export function shutdownSignals(): Shutdown {
  installed ??= new Shutdown();
  return installed;
}
