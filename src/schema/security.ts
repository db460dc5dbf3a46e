/**
 * The security settings the Coordinator's, the agent's and the controller's files share, checked
 * alike everywhere: secret file paths, the instance allow-list and the listener caps.
 */
import * as v from 'valibot';
import { parseCidr } from '../net/address-policy.ts';

export const MAX_CONNECTIONS = { min: 1, max: 1_000_000 } as const;

/** A path to a secret file; the file itself is read (and refused if empty) when settings resolve. */
export const SecretFilePath = v.pipe(v.string('must be a file path'), v.minLength(1, 'must be a file path'));

const Cidr = v.pipe(
  v.string('must be a CIDR string'),
  v.rawCheck(({ dataset, addIssue }) => {
    if (!dataset.typed) return;
    try {
      parseCidr(dataset.value);
    } catch (err) {
      addIssue({ message: (err as Error).message });
    }
  }),
);

/** `pdlink.allowed_instance_networks`: at least one CIDR. */
export const AllowedNetworks = v.pipe(v.array(Cidr, 'must be an array of CIDR strings'), v.minLength(1, 'must name at least one network'));

/** `pdlink.http`: caps of this process's HTTP listeners. */
export const HttpCaps = v.object({
  max_connections: v.optional(
    v.pipe(
      v.number('must be a number'),
      v.integer('must be an integer'),
      v.minValue(MAX_CONNECTIONS.min, `must be in [${MAX_CONNECTIONS.min}, ${MAX_CONNECTIONS.max}]`),
      v.maxValue(MAX_CONNECTIONS.max, `must be in [${MAX_CONNECTIONS.min}, ${MAX_CONNECTIONS.max}]`),
    ),
  ),
});
