/**
 * Bodies and parameters of the controller's own API: `POST /v1/cluster/instances` takes one
 * instance entry exactly as the topology file holds it; `DELETE /v1/cluster/instances/{id}` names
 * an instance by its uint64 id; `?force=true` on a removal or a reload lifts the mass-removal guard
 * for that one change; `POST /v1/cluster/instances/{id}/role` names the role to move an instance to.
 */
import * as v from 'valibot';
import { InstanceEntry } from './controller-topology.ts';

/** Body of `POST /v1/cluster/instances`. */
export const AddInstanceBody = InstanceEntry;
export type AddInstanceBody = v.InferOutput<typeof AddInstanceBody>;

/** The `{id}` of `DELETE /v1/cluster/instances/{id}`: decimal digits of an exact integer. */
export const InstanceIdParam = v.pipe(
  v.string('must be a string'),
  v.regex(/^\d{1,16}$/, 'must be a decimal instance id'),
  v.transform(Number),
  v.safeInteger('must be at most 2^53-1'),
);

/** The `force` query parameter: `true` or `false` (absent: false). */
export const ForceParam = v.optional(v.picklist(['true', 'false'], 'must be true or false'), 'false');

/** Body of `POST /v1/cluster/instances/{id}/role`: the role to move the instance to, and whether the planner must leave it there. */
export const MoveRoleBody = v.strictObject({
  role: v.picklist(['prefill', 'decode'], 'must be "prefill" or "decode"'),
  /** Keep the planner off the instance afterwards (default true); false with its current role unpins it. */
  pin: v.optional(v.boolean('must be a boolean')),
});
export type MoveRoleBody = v.InferOutput<typeof MoveRoleBody>;
