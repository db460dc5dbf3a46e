/**
 * The policies by name. cache_affinity needs the scheduler's prefix index, so it is built there.
 */
export { cacheAffinity } from './cache-affinity.ts';
export { loadBalance } from './load-balance.ts';
export type { Policy, PolicyContext } from './policy.ts';
export { powerOfTwo } from './power-of-two.ts';
export { roundRobin } from './round-robin.ts';
