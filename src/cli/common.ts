/**
 * What every pdlink command shares: argument parsing errors (exit status 2), the listening lines,
 * serving Hono apps with Bun.serve, the all-interfaces guard, and clean shutdown on SIGINT/SIGTERM.
 */
import { isIP, isIPv6 } from 'node:net';
import { parseArgs } from 'node:util';
import { isAllInterfaces } from '../core/all-interfaces.ts';
import { shutdownSignals } from './shutdown.ts';

/** A command-line or configuration problem: the process prints the message and exits with 2. */
export class CliError extends Error {
  readonly exitCode = 2;
  constructor(message: string) {
    super(message);
    this.name = 'CliError';
  }
}

export interface ListenerSpec {
  /** Name printed in the listening line, e.g. `management`. */
  readonly name: string;
  readonly hostname: string;
  /** 0 = any free port. */
  readonly port: number;
  readonly fetch: (request: Request) => Response | Promise<Response>;
  readonly tls?: { cert: string; key: string; ca?: string; passphrase?: string };
  /** Seconds a keep-alive connection may stay idle (Bun's limit is 255). */
  readonly idleTimeoutSeconds?: number;
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
 * Starts one Bun server per spec, then prints `preamble` and one listening line per listener. The
 * lines come only once every listener is up: a harness that saw them can rely on the process
 * serving, so a process that fails to bind prints none. On any failure the ones already started
 * are stopped and a CliError names the listener and address.
 * @example const running = await startListeners([{ name: 'management', hostname: '127.0.0.1', port: 0, fetch: app.fetch }]);
 */
export async function startListeners(specs: readonly ListenerSpec[], preamble: readonly string[] = []): Promise<RunningListener[]> {
  const running: RunningListener[] = [];
  for (const spec of specs) {
    try {
      const server = Bun.serve({
        hostname: spec.hostname,
        port: spec.port,
        fetch: spec.fetch,
        idleTimeout: Math.min(255, spec.idleTimeoutSeconds ?? 180),
        ...(spec.tls === undefined ? {} : { tls: spec.tls }),
      });
      const port = server.port ?? spec.port;
      const url = listenerUrl(spec.hostname, port, spec.tls !== undefined);
      running.push({ name: spec.name, url, port, stop: () => server.stop(true) });
    } catch (cause) {
      await Promise.all(running.map((r) => r.stop()));
      const reason = cause instanceof Error ? cause.message : String(cause);
      throw new CliError(`cannot listen for ${spec.name} on ${listenerUrl(spec.hostname, spec.port, false)}: ${reason}`);
    }
  }
  for (const line of preamble) console.log(line);
  for (const r of running) console.log(listeningLine(r.name, r.url));
  return running;
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
 * Refuses a listener address meaning every interface unless the configuration allows it.
 * @throws CliError naming `key` and the setting that allows it.
 * @example refuseAllInterfaces('manage_ip', settings.manage.ip, false, 'http_config.allow_all_zero_ip_listening');
 */
export function refuseAllInterfaces(key: string, host: string, allowed: boolean, allowKey: string): void {
  if (allowed || !isAllInterfaces(host)) return;
  throw new CliError(`${key}: ${JSON.stringify(host)} listens on every interface; set ${allowKey} to true to allow it`);
}

/** Parses a command-line port: an integer in 0..65535 where 0 means any free port. */
export function parseCliPort(option: string, value: string): number {
  if (!/^\d+$/.test(value)) throw new CliError(`--${option}: must be an integer port, got ${JSON.stringify(value)}`);
  const port = Number(value);
  if (port !== 0 && (port < 1024 || port > 65535)) {
    throw new CliError(`--${option}: must be in [1024, 65535] (or 0 for any free port), got ${value}`);
  }
  return port;
}

/** Parses a command-line IP address (IPv4 or IPv6 text). */
export function parseCliIp(option: string, value: string): string {
  if (isIP(value) === 0) throw new CliError(`--${option}: must be an IPv4 or IPv6 address, got ${JSON.stringify(value)}`);
  return value;
}

/**
 * Parses `--name value` string options and `-h/--help`; an unknown option or a missing value is a
 * CliError carrying the command's help text.
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
    throw new CliError(`${(cause as Error).message}\n\n${helpText}`);
  }
}
