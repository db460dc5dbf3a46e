/**
 * Bodies and parameters of the controller's own API: `POST /v1/cluster/instances` takes one
 * instance entry exactly as the topology file holds it; `DELETE /v1/cluster/instances/{id}` names
 * an instance by its uint64 id; `?force=true` on a removal or a reload lifts the mass-removal guard
 * for that one change.
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
