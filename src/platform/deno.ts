/**
 * The platform seam on Deno: Deno.serve, Deno.createHttpClient for https calls with our CA and
 * certificate, and Deno.open for files. Deno.serve cannot ask for a client certificate nor check a
 * CRL, so a listener configured with either refuses to start (fail closed), as does an outgoing
 * client with a CRL; an encrypted key is decrypted here since Deno takes only plain PEM keys.
 */
import { createPrivateKey } from 'node:crypto';
import { ConfigError } from '../core/errors.ts';
import type { ClientTlsOptions, ServerTlsOptions } from './tls-options.ts';
import { denoGlobal, type DenoApi, type DenoServeInfo } from './deno-api.ts';
import { answerOf, type BodyOut, type PushedSource, type Platform, type Served, type ServeSpec } from './platform.ts';

/** Deno's connection info as the handler's env, plus the listener's count of requests in flight. */
interface DenoEnv extends DenoServeInfo {
  readonly pendingRequests: number;
}

function deno(): DenoApi {
  const api = denoGlobal();
  if (api === undefined) throw new Error('the Deno platform seam was used outside Deno');
  return api;
}

/** A key Deno can load: PKCS#8 PEM without a passphrase. */
function plainKey(key: string, passphrase: string | undefined): string {
  if (passphrase === undefined) return key;
  return createPrivateKey({ key, passphrase }).export({ type: 'pkcs8', format: 'pem' }).toString();
}

/**
 * The server TLS settings Deno.serve cannot enforce, by field. Each was turned on to refuse some
 * clients, so serving without it would let them in.
 * @example unsupportedServerTls({ cert, key, ca }) // ['ca']
 */
export function unsupportedServerTls(tls: ServerTlsOptions): (keyof ServerTlsOptions)[] {
  const out: (keyof ServerTlsOptions)[] = [];
  if (tls.ca !== undefined || tls.requestCert === true) out.push('ca');
  if (tls.crl !== undefined) out.push('crl');
  return out;
}

/**
 * The client TLS settings Deno's fetch cannot enforce: a CRL (Deno's HTTP client has no revocation check).
 * @example unsupportedClientTls({ ca, crl }) // ['crl']
 */
export function unsupportedClientTls(tls: ClientTlsOptions): (keyof ClientTlsOptions)[] {
  return tls.crl === undefined ? [] : ['crl'];
}

/** Deno.serve has no routes of its own: `spec.posts` are answered by `spec.fetch`, as the seam allows. */
function serve(spec: ServeSpec): Served {
  const tls = spec.tls;
  if (tls !== undefined) {
    const refused = unsupportedServerTls(tls);
    if (refused.length > 0)
      throw new ConfigError(`TLS setting ${refused.join(', ')} cannot be enforced by Deno.serve (no client certificates or CRLs)`);
  }
  const stopping = new AbortController();
  let pending = 0;
  const server = deno().serve({
    hostname: spec.hostname,
    port: spec.port,
    ...(tls === undefined ? {} : { cert: tls.cert, key: plainKey(tls.key, tls.passphrase) }),
    signal: stopping.signal,
    onListen: () => {}, // pdlink prints its own listening lines
    handler: (request, info) => {
      pending++;
      let done = false;
      const settle = (): void => {
        if (!done) pending--;
        done = true;
      };
      // `completed` settles once the response is out (or the client left), streams included.
      info.completed?.then(settle, settle);
      const env: DenoEnv = {
        remoteAddr: info.remoteAddr,
        ...(info.completed === undefined ? {} : { completed: info.completed }),
        get pendingRequests() {
          return pending;
        },
      };
      if (info.completed === undefined) {
        return Promise.resolve(spec.fetch(request, env)).finally(settle);
      }
      return spec.fetch(request, env);
    },
  });
  return {
    port: server.addr.port,
    // Aborting the signal closes every connection, like Bun's stop(true).
    stop: async () => {
      stopping.abort();
      await server.finished;
    },
  };
}

/** One HTTP client per TLS config, so its connections are pooled and kept alive across calls. */
const clients = new WeakMap<ClientTlsOptions, object>();

function tlsInit(tls: ClientTlsOptions): RequestInit {
  let client = clients.get(tls);
  if (client === undefined) {
    const refused = unsupportedClientTls(tls);
    if (refused.length > 0) throw new ConfigError(`TLS setting ${refused.join(', ')} cannot be enforced by Deno's fetch`);
    client = deno().createHttpClient({
      ...(tls.ca === undefined ? {} : { caCerts: [tls.ca] }),
      ...(tls.cert === undefined || tls.key === undefined ? {} : { cert: tls.cert, key: plainKey(tls.key, tls.passphrase) }),
    });
    clients.set(tls, client);
  }
  return { client } as RequestInit;
}

async function fileResponse(url: URL, headers: Record<string, string>): Promise<Response | undefined> {
  const api = deno();
  try {
    const file = await api.open(url);
    return new Response(file.readable, { headers });
  } catch (err) {
    if (err instanceof api.errors.NotFound) return undefined;
    throw err;
  }
}

/** Bytes a pushed body queues before it tells its source to wait. */
const QUEUED_BODY_HIGH_BYTES = 1 << 20;

/** A pushed body as a standard stream: the source starts with it, its chunks queued until read. */
class QueuedBody implements BodyOut {
  #controller!: ReadableStreamDefaultController<Uint8Array>;
  #full = false;

  constructor(private readonly source: PushedSource) {}

  start(controller: ReadableStreamDefaultController<Uint8Array>): void {
    this.#controller = controller;
    this.source.start(this);
  }

  /** The reader wants more: a source told to wait may go on. */
  pull(): void {
    if (!this.#full) return;
    this.#full = false;
    this.source.drained();
  }

  cancel(reason: unknown): void {
    this.source.cancel(reason);
  }

  write(chunk: Uint8Array): boolean {
    this.#controller.enqueue(chunk);
    if ((this.#controller.desiredSize ?? 1) > 0) return true;
    this.#full = true;
    return false;
  }

  close(): void {
    this.#controller.close();
  }

  error(err: unknown): void {
    this.#controller.error(err);
  }
}

export const denoPlatform: Platform = {
  name: 'deno',
  serve,
  peerAddress: (_request, env) => (env as Partial<DenoServeInfo> | undefined)?.remoteAddr?.hostname,
  // Deno.serve has no idle timeout that would cut a quiet stream: nothing to lift.
  keepOpen: () => {},
  postPlain: (url, headers, body, abort) =>
    fetch(url, { method: 'POST', headers, body, redirect: 'manual', signal: abort.signal }).then(answerOf),
  tlsInit,
  pushedBody: (source) =>
    new ReadableStream<Uint8Array>(new QueuedBody(source), new ByteLengthQueuingStrategy({ highWaterMark: QUEUED_BODY_HIGH_BYTES })),
  // Deno's legs go over fetch, whose pool is Deno's own.
  limitIdleConnections: () => {},
  fileResponse,
  unsupportedServerTls,
  unsupportedClientTls,
};
