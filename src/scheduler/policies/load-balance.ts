/**
 * `load_balance`: the least-loaded member first (MindIE's rule: least prefill load for P, least
 * slot/block load among P's linked D's for D), then the next least loaded, and so on.
 */
import type { Policy, PolicyDefinition } from './policy.ts';

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

/** The table's entry of load_balance (policies/index.ts registers it). */
export const definition: PolicyDefinition = {
  name: 'load_balance',
  roles: ['prefill', 'decode'],
  reasons: ['least_load'],
  summary: "the least-loaded member first (MindIE's rule)",
  create: () => loadBalance,
};
