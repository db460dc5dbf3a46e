/**
 * SIGINT/SIGTERM handling for the pdlink commands. The handlers are installed once, when the
 * process starts and before any listener exists, so a signal at any moment after start (even one
 * sent the instant a listening line appears, or while the process is still starting) ends in an
 * orderly close and exit 0 instead of death by the signal. A close that hangs must not leave a
 * process serving after it was told to stop, so a bound ends it with status 1.
 */

/** How long closing may take after a signal before the process exits anyway. */
export const CLOSE_BOUND_MS = 15_000;

let installed: Shutdown | undefined;

export class Shutdown {
  #signal: NodeJS.Signals | undefined;
  readonly #waiters: (() => void)[] = [];

  /**
   * Installs the handlers; `closeBoundMs` is how long closing may take after the first signal.
   * @example const shutdown = new Shutdown(); // or shutdownSignals() for the process-wide one
   */
  constructor(closeBoundMs = CLOSE_BOUND_MS) {
    const onSignal = (signal: NodeJS.Signals): void => {
      if (this.#signal !== undefined) {
        // A second signal while closing: the operator wants it gone now.
        console.error(`pdlink: ${signal} while closing, exiting at once`);
        process.exit(1);
      }
      this.#signal = signal;
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
