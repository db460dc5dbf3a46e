/**
 * The part of Deno's global that the seam uses, typed here: pdlink type-checks against Bun's types,
 * and this narrow view keeps Deno's full declarations (and their clashes with Bun's) out of it.
 */

export interface DenoNetAddr {
  readonly transport: string;
  readonly hostname: string;
  readonly port: number;
}

export interface DenoServeInfo {
  readonly remoteAddr: DenoNetAddr;
  /** Settles once the response has been sent (rejects when the client went away first). */
  readonly completed?: Promise<void>;
}

export interface DenoServeOptions {
  readonly hostname: string;
  readonly port: number;
  readonly cert?: string;
  readonly key?: string;
  readonly signal: AbortSignal;
  readonly onListen: (addr: DenoNetAddr) => void;
  readonly handler: (request: Request, info: DenoServeInfo) => Response | Promise<Response>;
}

export interface DenoHttpServer {
  readonly addr: DenoNetAddr;
  readonly finished: Promise<void>;
}

export interface DenoHttpClientOptions {
  readonly caCerts?: string[];
  readonly cert?: string;
  readonly key?: string;
}

export interface DenoFile {
  readonly readable: ReadableStream<Uint8Array>;
}

export interface DenoApi {
  serve(options: DenoServeOptions): DenoHttpServer;
  createHttpClient(options: DenoHttpClientOptions): object;
  open(path: URL): Promise<DenoFile>;
  readonly errors: { readonly NotFound: new (...args: never[]) => Error };
}

/**
 * Deno's global, or undefined on another platform.
 * @example const deno = denoGlobal(); if (deno) deno.serve({ ... });
 */
export function denoGlobal(): DenoApi | undefined {
  return (globalThis as { Deno?: DenoApi }).Deno;
}
