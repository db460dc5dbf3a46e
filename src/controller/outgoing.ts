/**
 * Every call the controller makes (role posts, status polls, snapshots, Coordinator probes) goes
 * through this client, so the headers they carry are decided in one place: `#headers()` adds the
 * management token when the cluster has one.
 */

import type { ClientTlsOptions } from '../platform/tls-options.ts';
import { platform } from '../platform/index.ts';

export interface OutgoingReply {
  readonly status: number;
  readonly body: unknown;
}

/** The calls the controller makes; tests substitute fake agents and Coordinators. */
export interface Outgoing {
  get(url: string): Promise<OutgoingReply>;
  post(url: string, body: unknown): Promise<OutgoingReply>;
}

export class ManagementClient implements Outgoing {
  readonly #timeoutMs: number;
  readonly #authorization: string | undefined;
  readonly #tls: ClientTlsOptions | undefined;

  /**
   * A client with a deadline per call. `token` is the cluster's management token, sent as
   * `Authorization: Bearer` on every call; with `tls`, https calls verify the server with its CA and
   * present its certificate (the topology's `tls.client_*`).
   * @example const client = new ManagementClient(5000, token);
   */
  constructor(timeoutMs: number, token?: string, tls?: ClientTlsOptions) {
    this.#timeoutMs = timeoutMs;
    this.#authorization = token === undefined ? undefined : `Bearer ${token}`;
    this.#tls = tls;
  }

  /**
   * GETs a JSON resource; rejects on a network error or the deadline.
   * @example const { status, body } = await client.get(`${agent}/v1/status`);
   */
  get(url: string): Promise<OutgoingReply> {
    return this.#call(url, { method: 'GET', headers: this.#headers() });
  }

  /**
   * POSTs a JSON body; rejects on a network error or the deadline.
   * @example await client.post(`${coordinator}/v1/instances/refresh`, snapshot);
   */
  post(url: string, body: unknown): Promise<OutgoingReply> {
    return this.#call(url, {
      method: 'POST',
      headers: { ...this.#headers(), 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
  }

  #headers(): Record<string, string> {
    const headers: Record<string, string> = { accept: 'application/json' };
    if (this.#authorization !== undefined) headers['authorization'] = this.#authorization;
    return headers;
  }

  async #call(url: string, init: RequestInit): Promise<OutgoingReply> {
    const res = await fetch(url, {
      ...init,
      ...(this.#tls === undefined ? {} : platform.tlsInit(this.#tls)),
      signal: AbortSignal.timeout(this.#timeoutMs),
    });
    const text = await res.text();
    let body: unknown = text;
    try {
      body = text === '' ? undefined : JSON.parse(text);
    } catch {
      // Not JSON: the text is kept for the error message.
    }
    return { status: res.status, body };
  }
}
