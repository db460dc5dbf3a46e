/**
 * How many file descriptors this process may open, read where Linux tells it (/proc/self/limits),
 * so that the legs' idle keep-alive connections are capped below it by default: idle sockets
 * that took every descriptor would leave none for the listeners to accept a health probe.
 */
import { readFileSync } from 'node:fs';

/** Idle connections kept at most when the limit cannot be read, and at most whatever the limit. */
export const IDLE_CAP_CEILING = 1024;

/**
 * The soft limit on open files (`Max open files` in /proc/self/limits), or undefined where it
 * cannot be read (not Linux) or is unlimited.
 * @example softFdLimit('Max open files            1024                 524288               files') // 1024
 */
export function softFdLimit(limits?: string): number | undefined {
  let text = limits;
  if (text === undefined) {
    try {
      text = readFileSync('/proc/self/limits', 'utf8');
    } catch {
      return undefined;
    }
  }
  const match = /^Max open files\s+(\d+)\s/m.exec(text);
  return match === null ? undefined : Number(match[1]);
}

/**
 * The default cap on idle leg connections: a quarter of the descriptor limit, at most
 * IDLE_CAP_CEILING, at least 1.
 * @example defaultIdleCap(400) // 100
 */
export function defaultIdleCap(fdLimit: number | undefined = softFdLimit()): number {
  if (fdLimit === undefined) return IDLE_CAP_CEILING;
  return Math.max(1, Math.min(IDLE_CAP_CEILING, Math.floor(fdLimit / 4)));
}
