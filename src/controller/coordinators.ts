/**
 * The Coordinators the controller keeps informed: one snapshot push in flight per Coordinator (a
 * newer snapshot asked for meanwhile goes right after), a readiness probe that catches a restarted
 * Coordinator (readiness 503, or answering again after failing) and sends it the snapshot at once.
 */
import type { Outgoing } from './outgoing.ts';
import type { RefreshBody } from './snapshot.ts';

export interface CoordinatorView {
  readonly url: string;
  readonly reachable: boolean;
  readonly lastPushAt: number | undefined;
  readonly lastError: { readonly message: string; readonly at: number } | undefined;
}

class CoordinatorLink {
  readonly url: string;
  reachable = false;
  lastPushAt: number | undefined;
  lastError: { message: string; at: number } | undefined;
  pushing: Promise<void> | undefined;
  again = false;
  probing = false;

  constructor(url: string) {
    this.url = url.replace(/\/+$/, '');
  }
}

export interface CoordinatorSetDeps {
  readonly client: Outgoing;
  readonly now: () => number;
  /** The snapshot to send now. */
  readonly snapshot: () => RefreshBody;
  readonly onPush?: (ok: boolean) => void;
}

export class CoordinatorSet {
  readonly #deps: CoordinatorSetDeps;
  #links: CoordinatorLink[];

  /** @example const coordinators = new CoordinatorSet(['http://127.0.0.1:1026'], { client, now, snapshot }); */
  constructor(urls: readonly string[], deps: CoordinatorSetDeps) {
    this.#deps = deps;
    this.#links = urls.map((u) => new CoordinatorLink(u));
  }

  /** Replaces the list, keeping the state of the Coordinators that stay. */
  set urls(urls: readonly string[]) {
    const old = new Map(this.#links.map((l) => [l.url, l]));
    this.#links = urls.map((u) => old.get(u.replace(/\/+$/, '')) ?? new CoordinatorLink(u));
  }

  get urls(): string[] {
    return this.#links.map((l) => l.url);
  }

  /**
   * Sends the current snapshot to every Coordinator; resolves when each push has ended, true if all succeeded.
   * @example await coordinators.pushAll();
   */
  async pushAll(): Promise<boolean> {
    const results = await Promise.all(this.#links.map((l) => this.#push(l)));
    return results.every(Boolean);
  }

  /** Probes every Coordinator's readiness; one that restarted gets the snapshot at once. */
  probe(): void {
    for (const link of this.#links) {
      if (link.probing) continue;
      link.probing = true;
      this.#deps.client
        .get(`${link.url}/v1/readiness`)
        .then(
          ({ status, body }) => {
            // A standby Coordinator is 503 "not master" by design, not for want of a snapshot; the period sends it one.
            const restarted = status === 503 && !JSON.stringify(body ?? '').includes('not master');
            if (restarted || !link.reachable) void this.#push(link);
          },
          (err: unknown) => {
            link.reachable = false;
            link.lastError = { message: `readiness: ${String(err)}`, at: this.#deps.now() };
          },
        )
        .finally(() => {
          link.probing = false;
        });
    }
  }

  views(): CoordinatorView[] {
    return this.#links.map((l) => ({ url: l.url, reachable: l.reachable, lastPushAt: l.lastPushAt, lastError: l.lastError }));
  }

  /** Waits for pushes in flight (closing). */
  async idle(): Promise<void> {
    await Promise.all(this.#links.map((l) => l.pushing));
  }

  async #push(link: CoordinatorLink): Promise<boolean> {
    if (link.pushing !== undefined) {
      link.again = true;
      await link.pushing;
      return link.reachable;
    }
    let ok = false;
    link.pushing = (async () => {
      do {
        link.again = false;
        ok = await this.#send(link);
      } while (link.again);
    })();
    try {
      await link.pushing;
    } finally {
      link.pushing = undefined;
    }
    return ok;
  }

  async #send(link: CoordinatorLink): Promise<boolean> {
    const body = this.#deps.snapshot();
    try {
      const { status, body: reply } = await this.#deps.client.post(`${link.url}/v1/instances/refresh`, body);
      link.reachable = true;
      if (status !== 200) {
        // Answered, so reachable; a refused snapshot is an error to show, not a reason to resend at once.
        link.lastError = { message: `refresh answered ${status}: ${JSON.stringify(reply)}`, at: this.#deps.now() };
        this.#deps.onPush?.(false);
        return false;
      }
      link.lastPushAt = this.#deps.now();
      // An error is shown while it is the latest news: a push that went through ends it.
      link.lastError = undefined;
      this.#deps.onPush?.(true);
      return true;
    } catch (err) {
      link.reachable = false;
      link.lastError = { message: err instanceof Error ? err.message : String(err), at: this.#deps.now() };
      this.#deps.onPush?.(false);
      return false;
    }
  }
}
