/**
 * pdrt_config, the settings a runtime context is created with: the cluster secret that turns on
 * the authenticated link handshake, and the caps of its link port. Packed into the 48-byte C
 * layout of pdrt.h; the secret itself is passed by pointer and copied by the runtime, so it lives
 * only as long as the pdrt_create call in this buffer's reach.
 */
import { INT32_MAX, SECRET_MAX, SECRET_MIN, type LinkPortLimits } from '../core/limits.ts';
import { binding } from './binding.ts';
import { invalid } from './check.ts';
import { checkInt } from './layout.ts';

export const CONFIG_BYTES = 48;
export { SECRET_MAX, SECRET_MIN, type LinkPortLimits };

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
    view.setBigUint64(0, binding.addressOf(secret), true);
    view.setUint32(8, secret.length, true);
  }
  LIMIT_FIELDS.forEach((field, i) => {
    const value = limits[field];
    if (value !== undefined) view.setUint32(12 + 4 * i, checkInt(value, `linkPort.${field}`, 1, INT32_MAX), true);
  });
}
