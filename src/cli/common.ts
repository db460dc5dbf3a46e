/**
 * What every pdlink command shares: argument parsing errors (exit status 2), the listening lines,
 * serving Hono apps through the runtime seam, the all-interfaces guard, and clean shutdown on SIGINT/SIGTERM.
 */
import { isIPv6 } from 'node:net';
import { parseArgs } from 'node:util';
import { ConfigError, type PdlinkError } from '../core/errors.ts';
import type { ServerTlsOptions } from '../platform/tls-options.ts';
import type { PostRoute, PostRoutes, ServeEnv } from '../platform/index.ts';
import { capConnections, DEFAULT_MAX_CONNECTIONS, type ServerFetch } from '../http/connection-cap.ts';
import { platform } from '../platform/index.ts';
import { shutdownSignals } from './shutdown.ts';

export interface ListenerSpec {
  /** Name printed in the listening line, e.g. `management`. */
  readonly name: string;
  readonly hostname: string;
  /** 0 = any free port. */
  readonly port: number;
  /** Hono's `app.fetch`; the runtime's env is passed on (the rate limit reads the peer address from it). */
  readonly fetch: (request: Request, env: ServeEnv) => Response | Promise<Response>;
  /** POST routes by exact path the runtime may dispatch itself; `fetch` answers them the same (ServeSpec.posts). */
  readonly posts?: PostRoutes;
  /** With `ca`, the listener requires a client certificate that chains to it (see config/tls.ts). */
  readonly tls?: ServerTlsOptions;
  /** Seconds a keep-alive connection may stay idle (Bun's limit is 255; Deno.serve has no such setting). */
  readonly idleTimeoutSeconds?: number;
  /** Requests served at once before non-probe requests get 503 (default DEFAULT_MAX_CONNECTIONS). */
  readonly maxConnections?: number;
  /** Body of the 503 the cap answers (default pdlink's error envelope). */
  readonly renderRefusal?: (err: PdlinkError) => unknown;
}

export interface RunningListener {
  readonly name: string;
  readonly url: string;
  readonly port: number;
  stop(): Promise<void>;
}

/**
 * URL of a listener, with IPv6 hosts in brackets.
 * @example listenerUrl('::1', 1026, false) // 'http://[::1]:1026'
 */
export function listenerUrl(hostname: string, port: number, tls: boolean): string {
  const host = isIPv6(hostname) ? `[${hostname}]` : hostname;
  return `${tls ? 'https' : 'http'}://${host}:${port}`;
}

/**
 * The line printed once per listener on start; harnesses and tests read it to find the port.
 * @example listeningLine('management', 'http://127.0.0.1:1026') // 'pdlink: management listening on http://127.0.0.1:1026'
 */
export function listeningLine(name: string, url: string): string {
  return `pdlink: ${name} listening on ${url}`;
}

/**
 * Starts one server per spec on the runtime's seam, then prints `preamble` and one listening line per listener. The
 * lines come only once every listener is up: a harness that saw them can rely on the process
 * serving, so a process that fails to bind prints none. On any failure the ones already started
 * are stopped and a ConfigError names the listener and address.
 * @example const running = await startListeners([{ name: 'management', hostname: '127.0.0.1', port: 0, fetch: app.fetch }]);
 */
export async function startListeners(specs: readonly ListenerSpec[], preamble: readonly string[] = []): Promise<RunningListener[]> {
  const running: RunningListener[] = [];
  for (const spec of specs) {
    try {
      const max = spec.maxConnections ?? DEFAULT_MAX_CONNECTIONS;
      const server = platform.serve({
        hostname: spec.hostname,
        port: spec.port,
        fetch: capConnections(spec.fetch as ServerFetch, max, spec.renderRefusal),
        ...(spec.posts === undefined ? {} : { posts: cappedPosts(spec.posts, max, spec.renderRefusal) }),
        idleTimeoutSeconds: spec.idleTimeoutSeconds ?? 180,
        ...(spec.tls === undefined ? {} : { tls: spec.tls }),
      });
      const url = listenerUrl(spec.hostname, server.port, spec.tls !== undefined);
      running.push({ name: spec.name, url, port: server.port, stop: () => server.stop() });
    } catch (cause) {
      await Promise.all(running.map((r) => r.stop()));
      const reason = cause instanceof Error ? cause.message : String(cause);
      throw new ConfigError(`cannot listen for ${spec.name} on ${listenerUrl(spec.hostname, spec.port, false)}: ${reason}`);
    }
  }
  for (const line of preamble) console.log(line);
  for (const r of running) console.log(listeningLine(r.name, r.url));
  return running;
}

/** Each POST route under the listener's cap, as its fetch is. */
function cappedPosts(posts: PostRoutes, max: number, render: ListenerSpec['renderRefusal']): PostRoutes {
  const capped: Record<string, PostRoute> = {};
  for (const [path, handler] of Object.entries(posts)) capped[path] = capConnections(handler as ServerFetch, max, render) as PostRoute;
  return capped;
}

/**
 * Resolves when SIGINT or SIGTERM has arrived (at once if one came during start-up), after running
 * `close` once. The handlers themselves are installed when the process starts (shutdown.ts).
 * @example await untilSignal(async () => { await Promise.all(listeners.map((l) => l.stop())); });
 */
export async function untilSignal(close: () => Promise<void>): Promise<void> {
  await shutdownSignals().received();
  await close();
}

/**
 * Parses `--name value` string options and `-h/--help`; an unknown option or a missing value is a
 * ConfigError carrying the command's help text.
 * @example const { values, help } = parseStringOptions(argv, ['config', 'manage_ip'], HELP);
 */
export function parseStringOptions<const K extends string>(
  argv: string[],
  names: readonly K[],
  helpText: string,
): { values: Partial<Record<K, string>>; help: boolean } {
  const options: Record<string, { type: 'string' } | { type: 'boolean'; short: string }> = { help: { type: 'boolean', short: 'h' } };
  for (const name of names) options[name] = { type: 'string' };
  try {
    const { values } = parseArgs({ args: argv, strict: true, allowPositionals: false, options });
    const { help, ...rest } = values as Record<string, string | boolean | undefined>;
    return { values: rest as Partial<Record<K, string>>, help: help === true };
  } catch (cause) {
    throw new ConfigError(`${(cause as Error).message}\n\n${helpText}`);
  }
}
