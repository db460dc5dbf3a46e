/**
 * How a decoder tells prefillers that it is done with their blocks: one `POST /sim/kv/release`
 * per prefiller at a time, carrying every request id that finished since the previous one, so
 * under load the notices cost a handful of requests instead of one per decoded request.
 */

import type { ClientTlsOptions } from '../../../platform/tls-options.ts';
import { platform } from '../../../platform/index.ts';

/** Longest wait for one notice; a lost one is covered by the prefiller's lease. */
export const RELEASE_TIMEOUT_MS = 5_000;

interface Target {
  pending: string[];
  sending: boolean;
}

export class ReleaseNotifier {
  readonly #targets = new Map<string, Target>();
  readonly #post: (url: string, ids: readonly string[], token?: string) => Promise<void>;
  readonly #scheme: 'http' | 'https';

  /**
   * A notifier that POSTs over HTTP (over https with `tls`, for prefillers whose management
   * listener requires TLS), or through `post` (tests).
   * @example const notifier = new ReleaseNotifier(); notifier.notify('127.0.0.2', 31000, 'req-1#4');
   */
  constructor(post?: (url: string, ids: readonly string[], token?: string) => Promise<void>, tls?: ClientTlsOptions) {
    this.#post = post ?? ((url, ids, token) => postRelease(url, ids, tls, token));
    this.#scheme = tls === undefined ? 'http' : 'https';
  }

  /** The management token the prefillers' listeners require (the cluster shares one). */
  token: string | undefined;

  /**
   * Queues a notice; it leaves at once unless one to the same prefiller is in flight, in which
   * case it rides with the next.
   * @example notifier.notify(kv.host, kv.port, kv.remoteRequestId);
   */
  notify(host: string, port: number, remoteRequestId: string): void {
    const url = `${this.#scheme}://${host.includes(':') ? `[${host}]` : host}:${port}/sim/kv/release`;
    let target = this.#targets.get(url);
    if (target === undefined) {
      target = { pending: [], sending: false };
      this.#targets.set(url, target);
    }
    target.pending.push(remoteRequestId);
    if (!target.sending) void this.#flush(url, target);
  }

  async #flush(url: string, target: Target): Promise<void> {
    target.sending = true;
    while (target.pending.length > 0) {
      const ids = target.pending;
      target.pending = [];
      await this.#post(url, ids, this.token).catch(() => {});
    }
    target.sending = false;
  }
}

async function postRelease(url: string, ids: readonly string[], tls: ClientTlsOptions | undefined, token?: string): Promise<void> {
  const res = await fetch(url, {
    ...(tls === undefined ? {} : platform.tlsInit(tls)),
    method: 'POST',
    headers: { 'content-type': 'application/json', ...(token === undefined ? {} : { authorization: `Bearer ${token}` }) },
    body: JSON.stringify({ remote_request_ids: ids }),
    signal: AbortSignal.timeout(RELEASE_TIMEOUT_MS),
  });
  await res.arrayBuffer();
}
