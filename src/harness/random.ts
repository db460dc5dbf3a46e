/**
 * A seeded random source for synthetic workloads, so one seed always gives the same arrivals,
 * lengths and prefixes (a run can be repeated against another deployment), plus the length
 * distributions the command line names.
 */

export class Random {
  #state: number;

  constructor(seed: number) {
    this.#state = seed >>> 0;
  }

  /** Uniform in [0, 1) (mulberry32). */
  next(): number {
    this.#state = (this.#state + 0x6d2b79f5) >>> 0;
    let t = this.#state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  }

  /** Exponential with the given mean (Poisson inter-arrival gaps). */
  exponential(mean: number): number {
    return -Math.log(1 - this.next()) * mean;
  }

  /** Standard normal (Box–Muller). */
  normal(): number {
    const u = 1 - this.next();
    return Math.sqrt(-2 * Math.log(u)) * Math.cos(2 * Math.PI * this.next());
  }

  /** An integer in [min, max]. */
  int(min: number, max: number): number {
    return min + Math.floor(this.next() * (max - min + 1));
  }
}

/** A distribution of token counts: `N`, `uniform:MIN:MAX`, `exponential:MEAN` or `lognormal:MEAN:CV`. */
export type LengthDistribution =
  | { readonly kind: 'fixed'; readonly value: number }
  | { readonly kind: 'uniform'; readonly min: number; readonly max: number }
  | { readonly kind: 'exponential'; readonly mean: number }
  | { readonly kind: 'lognormal'; readonly mean: number; readonly cv: number };

/**
 * Parses a distribution; the error message says what is accepted.
 * @example parseLength('uniform:128:512') // { kind: 'uniform', min: 128, max: 512 }
 */
export function parseLength(text: string): LengthDistribution {
  const parts = text.split(':');
  const nums = parts.slice(1).map(Number);
  const positive = (n: number | undefined): n is number => n !== undefined && Number.isFinite(n) && n > 0;
  if (parts.length === 1 && /^\d+$/.test(text) && Number(text) >= 1) return { kind: 'fixed', value: Number(text) };
  if (parts[0] === 'uniform' && nums.length === 2 && nums.every(Number.isInteger) && positive(nums[0]) && nums[1]! >= nums[0]!)
    return { kind: 'uniform', min: nums[0], max: nums[1]! };
  if (parts[0] === 'exponential' && nums.length === 1 && positive(nums[0])) return { kind: 'exponential', mean: nums[0] };
  if (parts[0] === 'lognormal' && nums.length === 2 && positive(nums[0]) && positive(nums[1]))
    return { kind: 'lognormal', mean: nums[0], cv: nums[1] };
  throw new Error(`must be N, uniform:MIN:MAX, exponential:MEAN or lognormal:MEAN:CV with positive numbers, got ${JSON.stringify(text)}`);
}

/**
 * Draws one token count (at least 1).
 * @example sampleLength({ kind: 'fixed', value: 64 }, new Random(1)) // 64
 */
export function sampleLength(dist: LengthDistribution, random: Random): number {
  switch (dist.kind) {
    case 'fixed':
      return dist.value;
    case 'uniform':
      return random.int(dist.min, dist.max);
    case 'exponential':
      return Math.max(1, Math.round(random.exponential(dist.mean)));
    case 'lognormal': {
      // Parameters chosen so the distribution's mean and coefficient of variation are the ones asked for.
      const sigma2 = Math.log(1 + dist.cv * dist.cv);
      const mu = Math.log(dist.mean) - sigma2 / 2;
      return Math.max(1, Math.round(Math.exp(mu + Math.sqrt(sigma2) * random.normal())));
    }
  }
}

/**
 * A length distribution as `--input-len` takes it.
 * @example lengthText({ kind: 'uniform', min: 128, max: 512 }) // 'uniform:128:512'
 */
export function lengthText(dist: LengthDistribution): string {
  switch (dist.kind) {
    case 'fixed':
      return String(dist.value);
    case 'uniform':
      return `uniform:${dist.min}:${dist.max}`;
    case 'exponential':
      return `exponential:${dist.mean}`;
    case 'lognormal':
      return `lognormal:${dist.mean}:${dist.cv}`;
  }
}
