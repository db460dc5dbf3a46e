/**
 * `power_of_two`: two distinct members at random, the less loaded first; if neither fits, the
 * rest in load order. Random choice keeps several coordinators (or bursts) from herding onto the
 * single least-loaded instance between load updates.
 */
import { lessLoaded } from '../pool.ts';
import type { Policy, PolicyDefinition } from './policy.ts';

/**
 * The power_of_two policy.
 * @example powerOfTwo.order(topology.prefills, { ...context, rng: Math.random })
 */
export const powerOfTwo: Policy = {
  name: 'power_of_two',
  *order(pool, context) {
    const size = pool.size;
    if (size === 0) return;
    context.reason = 'power_of_two';
    if (size === 1) {
      yield pool.at(0) as NonNullable<ReturnType<typeof pool.at>>;
      return;
    }
    const i = randomIndex(context.rng, size);
    let j = randomIndex(context.rng, size - 1);
    if (j >= i) j++;
    const a = pool.at(i) as NonNullable<ReturnType<typeof pool.at>>;
    const b = pool.at(j) as NonNullable<ReturnType<typeof pool.at>>;
    const [first, second] = lessLoaded(a, b) ? [a, b] : [b, a];
    yield first;
    yield second;
    context.reason = 'least_load';
    yield* pool.ascending();
  },
};

function randomIndex(rng: () => number, size: number): number {
  // Clamped: an rng returning exactly 1 (outside its contract) must not index past the end.
  return Math.min(size - 1, Math.max(0, Math.floor(rng() * size)));
}

/** The table's entry of power_of_two (policies/index.ts registers it). */
export const definition: PolicyDefinition = {
  name: 'power_of_two',
  roles: ['prefill', 'decode'],
  reasons: ['power_of_two', 'least_load'],
  summary: 'two members at random, the less loaded first',
  create: () => powerOfTwo,
};
