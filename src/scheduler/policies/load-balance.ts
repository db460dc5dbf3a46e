/**
 * `load_balance`: the least-loaded member first (MindIE's rule: least prefill load for P, least
 * slot/block load among P's linked D's for D), then the next least loaded, and so on.
 */
import type { Policy } from './policy.ts';

/**
 * The load_balance policy.
 * @example loadBalance.order(topology.prefills, context)
 */
export const loadBalance: Policy = {
  name: 'load_balance',
  *order(pool, context) {
    context.reason = 'least_load';
    yield* pool.ascending();
  },
  first(pool, context) {
    context.reason = 'least_load';
    return pool.min();
  },
};
