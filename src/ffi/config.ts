/**
 * pdrt_config, the settings a runtime context is created with: the cluster secret that turns on
 * the authenticated link handshake, and the caps of its link port. Packed into the 48-byte C
 * layout of pdrt.h; the secret itself is passed by pointer and copied by the runtime, so it lives
 * only as long as the pdrt_create call in this buffer's reach.
 */
import { ptr } from 'bun:ffi';
import { invalid } from './check.ts';
import { checkInt } from './layout.ts';

export const CONFIG_BYTES = 48;
/** PDRT_SECRET_MIN / PDRT_SECRET_MAX: bytes of a cluster secret. */
export const SECRET_MIN = 16;
export const SECRET_MAX = 4096;

/** Caps of a context's link port (pdrt_config); an absent field takes the runtime's default. */
export interface LinkPortLimits {
  /** An unfinished incoming handshake is dropped after this (default 5000). */
  readonly handshakeTimeoutMs?: number;
  /** A served data connection idle this long is closed (default 60000). */
  readonly idleTimeoutMs?: number;
  /** Links served in total (default 1024), and from one peer address (default 64). */
  readonly maxLinks?: number;
  readonly maxLinksPerPeer?: number;
  /** Incoming handshakes in progress in total (default 256), and from one peer address (default 32). */
  readonly maxHandshakes?: number;
  readonly maxHandshakesPerPeer?: number;
  /** Data connections served to one peer address (default 256), and in total (default 1024). */
  readonly maxConnsPerPeer?: number;
  readonly maxConns?: number;
}

/** Field order of the limits after link_secret (8 bytes) and link_secret_len (4 bytes). */
const LIMIT_FIELDS = [
  'handshakeTimeoutMs',
  'idleTimeoutMs',
  'maxLinks',
  'maxLinksPerPeer',
  'maxHandshakes',
  'maxHandshakesPerPeer',
  'maxConnsPerPeer',
  'maxConns',
] as const satisfies readonly (keyof LinkPortLimits)[];

/**
 * Packs a pdrt_config into `bytes` (CONFIG_BYTES long); `secret` must stay referenced until the
 * pdrt_create call that reads it has returned.
 * @example packConfig(buf, new TextEncoder().encode('a secret of 16+ bytes'), { idleTimeoutMs: 30_000 })
 */
export function packConfig(bytes: Uint8Array, secret: Uint8Array | undefined, limits: LinkPortLimits = {}): void {
  const view = new DataView(bytes.buffer, bytes.byteOffset, CONFIG_BYTES);
  bytes.fill(0, 0, CONFIG_BYTES);
  if (secret !== undefined) {
    if (!(secret instanceof Uint8Array) || secret.length < SECRET_MIN || secret.length > SECRET_MAX)
      throw invalid('linkSecret', `must be ${SECRET_MIN} to ${SECRET_MAX} bytes`);
    view.setBigUint64(0, BigInt(ptr(secret)), true);
    view.setUint32(8, secret.length, true);
  }
  LIMIT_FIELDS.forEach((field, i) => {
    const value = limits[field];
    if (value !== undefined) view.setUint32(12 + 4 * i, checkInt(value, `linkPort.${field}`, 1, 0x7fffffff), true);
  });
}
