/**
 * The policy table: every pair-selection policy a scheduler can use, by name. The built-in policies
 * are registered by policies/index.ts, one line each; a gateway registers its own through the
 * plugin entry point before it creates a Coordinator. This table is the only place that knows them
 * all: configuration is checked against it, and a scheduler makes its policies from it.
 */
import { errors } from '../../core/errors.ts';
import { POLICY_NAME } from '../../schema/coordinator-config.ts';
import type { PolicyDefinition, PolicyRole } from './policy.ts';

/** What a policy name may be: what the configuration schema accepts (schema/coordinator-config.ts). */
const NAME = POLICY_NAME;
const definitions = new Map<string, PolicyDefinition>();

/**
 * Adds a policy to the table. A name is taken once: registering another definition under a taken
 * name throws (the same definition again is a no-op).
 * @throws PdlinkError `bad_request` naming the field of a malformed definition.
 * @example registerPolicy(myPolicy); createPdlink({ policy: { prefill: myPolicy.name } });
 */
export function registerPolicy(definition: PolicyDefinition): void {
  if (typeof definition !== 'object' || definition === null) throw errors.invalidArgument('definition', 'must be a policy definition');
  const { name, roles, reasons, create } = definition;
  if (typeof name !== 'string' || !NAME.test(name))
    throw errors.invalidArgument('name', 'must be 1 to 64 lowercase letters, digits or _, starting with a letter');
  if (!Array.isArray(roles) || roles.length === 0 || roles.some((r) => r !== 'prefill' && r !== 'decode'))
    throw errors.invalidArgument('roles', 'must list prefill, decode or both');
  if (!Array.isArray(reasons) || reasons.some((r) => typeof r !== 'string' || r === ''))
    throw errors.invalidArgument('reasons', 'must be an array of non-empty strings');
  if (typeof create !== 'function') throw errors.invalidArgument('create', 'must be a function making the policy');
  const needs = definition.needs ?? [];
  if (!Array.isArray(needs) || needs.some((n) => n !== 'prefix_index' && n !== 'kv_hits'))
    throw errors.invalidArgument('needs', 'must list prefix_index, kv_hits or neither');
  const taken = definitions.get(name);
  if (taken === definition) return;
  if (taken !== undefined) throw errors.invalidArgument('name', `a policy named ${name} is registered already`);
  definitions.set(name, definition);
}

/**
 * The definition registered under `name`, or undefined.
 * @example policyDefinition('round_robin')?.roles // ['prefill', 'decode']
 */
export function policyDefinition(name: string): PolicyDefinition | undefined {
  return definitions.get(name);
}

/**
 * The names of the policies that can choose for `role`, in the order they were registered.
 * @example policyNames('decode') // ['load_balance', 'round_robin', 'power_of_two']
 */
export function policyNames(role: PolicyRole): string[] {
  return [...definitions.values()].filter((d) => d.roles.includes(role)).map((d) => d.name);
}

/**
 * The definition `name` names for `role`, or why it cannot be used there.
 * @throws PdlinkError `bad_request` naming `path`.
 * @example policyFor('cache_affinity', 'prefill', 'policy.prefill')
 */
export function policyFor(name: unknown, role: PolicyRole, path: string): PolicyDefinition {
  const definition = typeof name === 'string' ? definitions.get(name) : undefined;
  if (definition !== undefined && definition.roles.includes(role)) return definition;
  const allowed = policyNames(role).join(', ');
  if (definition !== undefined)
    throw errors.invalidArgument(path, `${definition.name} applies to ${definition.roles.join(' and ')} only; use one of ${allowed}`);
  throw errors.invalidArgument(path, `must be one of ${allowed}`);
}
