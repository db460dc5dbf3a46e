/**
 * Per-client token buckets on the inference listener, so one client (an API key, else an address)
 * cannot take the whole proxy: each request takes one token, a bucket refills at `ratePerSecond`
 * up to `burst`, and an empty bucket answers 429 with `Retry-After` in OpenAI's error shape.
 */
import { errors } from '../core/errors.ts';
import { openAiErrorBody } from '../proxy/exchange/errors.ts';
import { platform } from '../platform/index.ts';
import { acceptedKeyOf, isProbePath } from './auth.ts';
import type { Gate } from './gate.ts';

export interface RateLimitSettings {
  /** Tokens added per second to each client's bucket. */
  readonly ratePerSecond: number;
  /** Bucket size: requests a quiet client may send at once. */
  readonly burst: number;
}

interface Bucket {
  tokens: number;
  at: number;
}

/** Buckets beyond this many are pruned (full ones first), so a flood of addresses cannot grow memory without bound. */
const MAX_BUCKETS = 100_000;

export class TokenBuckets {
  readonly #settings: RateLimitSettings;
  readonly #buckets = new Map<string, Bucket>();
  readonly #now: () => number;

  /** @example new TokenBuckets({ ratePerSecond: 10, burst: 20 }) */
  constructor(settings: RateLimitSettings, now: () => number = () => performance.now()) {
    this.#settings = settings;
    this.#now = now;
  }

  /**
   * Takes one token of `client`'s bucket: 0 when granted, else the seconds until one is there.
   * @example const wait = buckets.take('key:abc'); if (wait > 0) refuse(wait);
   */
  take(client: string): number {
    const now = this.#now();
    const { ratePerSecond, burst } = this.#settings;
    const bucket = this.#buckets.get(client) ?? { tokens: burst, at: now };
    bucket.tokens = Math.min(burst, bucket.tokens + ((now - bucket.at) / 1000) * ratePerSecond);
    bucket.at = now;
    this.#buckets.delete(client);
    this.#buckets.set(client, bucket); // most recently used last: pruning drops the oldest
    if (this.#buckets.size > MAX_BUCKETS) this.#buckets.delete(this.#buckets.keys().next().value!);
    if (bucket.tokens >= 1) {
      bucket.tokens -= 1;
      return 0;
    }
    return (1 - bucket.tokens) / ratePerSecond;
  }
}

/**
 * The rate limit, run after inferenceGate: keyed by the accepted API key, else by address; the 429
 * it answers, or undefined when a token was taken. Mounted with gateMiddleware, and run as it is
 * before the proxy's handler.
 * @example const refused = rateGate(settings)(request, env, '/v1/completions'); if (refused) return refused;
 */
export function rateGate(settings: RateLimitSettings): Gate {
  const buckets = new TokenBuckets(settings);
  return (request, env, path) => {
    if (isProbePath(path)) return undefined;
    const key = acceptedKeyOf(request);
    const client = key !== undefined ? `key:${key}` : `ip:${platform.peerAddress(request, env) ?? 'unknown'}`;
    const wait = buckets.take(client);
    if (wait === 0) return undefined;
    const seconds = Math.max(1, Math.ceil(wait));
    const err = errors.rateLimited(`rate limit of ${settings.ratePerSecond} requests per second exceeded; retry in ${seconds} s`);
    return new Response(JSON.stringify(openAiErrorBody(err)), {
      status: 429,
      headers: { 'content-type': 'application/json', 'retry-after': String(seconds) },
    });
  };
}
