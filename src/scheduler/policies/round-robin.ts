/**
 * `round_robin`: each pool (the prefill pool, each P's decode pool) turns its own cursor, so
 * requests spread evenly whatever the loads; a member the request does not fit on is passed over.
 */
import type { Policy, PolicyDefinition } from './policy.ts';

/**
 * The round_robin policy.
 * @example roundRobin.order(p.decodes, context)
 */
export const roundRobin: Policy = {
  name: 'round_robin',
  *order(pool, context) {
    const size = pool.size;
    const start = pool.cursor % Math.max(1, size);
    context.reason = 'round_robin';
    for (let k = 0; k < size; k++) {
      const index = (start + k) % size;
      const member = pool.at(index);
      if (member === undefined) continue;
      // The cursor moves past every member offered; the walk stops at the one taken.
      pool.cursor = index + 1;
      yield member;
    }
  },
};

/** The table's entry of round_robin (policies/index.ts registers it). */
export const definition: PolicyDefinition = {
  name: 'round_robin',
  roles: ['prefill', 'decode'],
  reasons: ['round_robin'],
  summary: 'each pool turns its own cursor, whatever the loads',
  create: () => roundRobin,
};
