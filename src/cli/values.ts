/**
 * Command-line values every pdlink command parses the same way (ports, addresses), with the same
 * messages.
 */
import { isIP } from 'node:net';
import { ConfigError } from '../core/errors.ts';

/** Parses a command-line port: an integer in 0..65535 where 0 means any free port. */
export function parseCliPort(option: string, value: string): number {
  if (!/^\d+$/.test(value)) throw new ConfigError(`--${option}: must be an integer port, got ${JSON.stringify(value)}`);
  const port = Number(value);
  if (port !== 0 && (port < 1024 || port > 65535)) {
    throw new ConfigError(`--${option}: must be in [1024, 65535] (or 0 for any free port), got ${value}`);
  }
  return port;
}

/** Parses a command-line IP address (IPv4 or IPv6 text). */
export function parseCliIp(option: string, value: string): string {
  if (isIP(value) === 0) throw new ConfigError(`--${option}: must be an IPv4 or IPv6 address, got ${JSON.stringify(value)}`);
  return value;
}
