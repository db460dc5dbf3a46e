/**
 * What the role driver is built from, and the checks its numeric options pass once, at construction,
 * with the uniform messages every option of pdlink uses. Kept beside the driver so its class starts
 * from settled values and reads as the reconciliation it runs.
 */
import { optionErrors } from '../../core/errors.ts';
import type { LeaseClock } from '../../core/lease-clock.ts';
import { INT32_MAX } from '../../core/limits.ts';
import type { Registry } from '../../core/metrics.ts';
import { DEFAULT_TIMEOUT_MS, type LinkManager } from '../../links/manager.ts';
import { DEFAULT_LINK_BASE_PORT } from '../../schema/instance-config.ts';
import type { LocalDevice } from './plan.ts';
import type { RetryPolicy } from './retry.ts';

export interface RoleControllerOptions {
  readonly manager: LinkManager;
  /** The agent's device contexts; a post's local devices must be among them. */
  readonly devices: readonly LocalDevice[];
  /** Shared by every agent of the deployment: peer device d listens on its ip at base + d. */
  readonly linkBasePort?: number;
  /** Timeout of each link/unlink call (default 3000 ms). */
  readonly linkTimeoutMs?: number;
  readonly retry?: Partial<RetryPolicy>;
  /** Time and timers (tests pass a ManualClock). */
  readonly clock?: LeaseClock;
  readonly random?: () => number;
  readonly metrics?: Registry;
}

/**
 * The link base port and call timeout, defaulted and checked; throws the option error for the first bad one.
 * @example const { basePort, timeoutMs } = linkSettings({ manager, devices, linkTimeoutMs: 1000 });
 */
export function linkSettings(options: RoleControllerOptions): { readonly basePort: number; readonly timeoutMs: number } {
  const basePort = options.linkBasePort ?? DEFAULT_LINK_BASE_PORT;
  if (!Number.isInteger(basePort) || basePort < 1 || basePort > 65535) throw optionErrors.integerIn('linkBasePort', 1, 65535);
  const timeoutMs = options.linkTimeoutMs ?? DEFAULT_TIMEOUT_MS;
  if (!Number.isInteger(timeoutMs) || timeoutMs < 1 || timeoutMs > INT32_MAX) throw optionErrors.integerIn('linkTimeoutMs', 1, '2^31 - 1');
  return { basePort, timeoutMs };
}
