/**
 * Feeds runtime events (dead peers, server-side links and unlinks, unusable links) to a listener:
 * a loop of short `events` tasks on a pool of its own, so a long wait never takes a link thread.
 */
import type { RuntimeLinkEvent } from '../links/types.ts';
import type { WorkerPool } from './pool.ts';
import type { ContextEvent } from './protocol.ts';

/** Longest wait of one events task; bounds how long `stop()` takes. */
export const EVENT_WAIT_MS = 200;

export interface EventPumpOptions {
  readonly pool: WorkerPool;
  /** Endpoint name of each context handle. */
  readonly endpoints: ReadonlyMap<number, string>;
  readonly onEvent: (endpoint: string, event: RuntimeLinkEvent) => void;
  readonly waitMs?: number;
}

export class EventPump {
  readonly #options: EventPumpOptions;
  #running: Promise<void> | undefined;
  #stopped = false;

  constructor(options: EventPumpOptions) {
    this.#options = options;
  }

  /** Starts the loop; idempotent. */
  start(): void {
    this.#running ??= this.#loop();
  }

  /**
   * Stops the loop and resolves once its last task has returned (within the wait period).
   * @example await pump.stop();
   */
  async stop(): Promise<void> {
    this.#stopped = true;
    await this.#running;
  }

  async #loop(): Promise<void> {
    const handles = [...this.#options.endpoints.keys()];
    const waitMs = this.#options.waitMs ?? EVENT_WAIT_MS;
    while (!this.#stopped) {
      const reply = await this.#options.pool.run<ContextEvent[]>({ op: 'events', handles, waitMs });
      if (!reply.ok) {
        // The events worker died or the runtime failed: the pool replaces the thread; back off
        // one period so a persistent failure cannot spin.
        console.error(`pdlink: runtime event wait failed: ${reply.message}`);
        await new Promise((resolve) => setTimeout(resolve, waitMs));
        continue;
      }
      for (const e of reply.value) this.#deliver(e);
    }
  }

  #deliver(e: ContextEvent): void {
    const endpoint = this.#options.endpoints.get(e.handle);
    if (endpoint === undefined) return;
    try {
      this.#options.onEvent(endpoint, { kind: e.kind, side: e.side, remoteClusterId: e.remoteClusterId, code: e.code, timeMs: e.timeMs });
    } catch (cause) {
      console.error('pdlink: runtime event listener failed', cause);
    }
  }
}
