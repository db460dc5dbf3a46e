/**
 * The built-in policies, registered in the policy table (table.ts) when the scheduler is loaded.
 * Adding a policy is a file beside these, exporting its `definition`, and its line below.
 */
import { definition as cacheAffinity } from './cache-affinity.ts';
import { definition as loadBalance } from './load-balance.ts';
import { definition as powerOfTwo } from './power-of-two.ts';
import { definition as precisePrefix } from './precise-prefix.ts';
import { definition as roundRobin } from './round-robin.ts';
import { registerPolicy } from './table.ts';

for (const definition of [loadBalance, roundRobin, powerOfTwo, cacheAffinity, precisePrefix]) registerPolicy(definition);

export type { Policy, PolicyBuild, PolicyContext, PolicyDefinition, PolicyNeed, PolicyRole } from './policy.ts';
export { policyDefinition, policyFor, policyNames, registerPolicy } from './table.ts';
