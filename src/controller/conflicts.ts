/**
 * What the agents would refuse, refused before it reaches them: agents pair devices by position,
 * so every instance of a cluster has as many devices; an agent is one instance, so no two
 * instances share a server_ip, a manage_url, an inference_url or a device (its address and logical
 * id), however the address is spelt (`::1` and `0:0:0:0:0:0:0:1` are one). Let in, such an
 * instance leaves itself and its peers posting roles that are refused forever. The topology file
 * and the API check through this one function, so they refuse alike.
 */
import { ipKey, urlKey } from '../net/address-key.ts';
import { errors, PdlinkError, type FieldIssue } from '../core/errors.ts';
import type { Member } from './member.ts';
import type { DesiredInstance } from './types.ts';

/** An instance and how a message names it: `instances[3]` in a file, `instance 7` once running. */
export interface NamedInstance {
  readonly spec: DesiredInstance;
  /** Prefix of its issue paths (`instances[3]`; empty for the API's one entry). */
  readonly path: string;
  readonly name: string;
}

/** A field issue and whether it clashes with another instance (409) or is wrong in itself (422). */
export interface Conflict extends FieldIssue {
  readonly clash: boolean;
}

/**
 * Every conflict of `candidates` with `existing` instances and with earlier candidates; empty when
 * they may join. The cluster's device count is the first existing instance's, else the first candidate's.
 * @example conflicts(members.map(named), [{ spec, path: '', name: `instance ${spec.id}` }])
 */
export function conflicts(existing: readonly NamedInstance[], candidates: readonly NamedInstance[]): Conflict[] {
  const out: Conflict[] = [];
  const owners = new Map<string, { owner: NamedInstance; written: string }>();
  const claim = (key: string, written: string, owner: NamedInstance): { owner: NamedInstance; written: string } | undefined => {
    const first = owners.get(key);
    if (first === undefined) owners.set(key, { owner, written });
    return first?.owner.spec.id === owner.spec.id ? undefined : first;
  };
  const model = existing[0] ?? candidates[0];
  for (const [i, instance] of [...existing, ...candidates].entries()) {
    const own = i >= existing.length;
    const at = (key: string): string => (instance.path === '' ? key : `${instance.path}.${key}`);
    const clash = (key: string, what: string, written: string, first: { owner: NamedInstance; written: string } | undefined): void => {
      if (!own || first === undefined) return;
      const spelt = first.written === written ? '' : ` (written ${first.written} there)`;
      out.push({ path: at(key), message: `${what} ${written} is already ${first.owner.name}'s${spelt}`, clash: true });
    };
    const s = instance.spec;
    clash('server_ip', 'server_ip', s.serverIp, claim(`ip ${ipKey(s.serverIp)}`, s.serverIp, instance));
    clash('manage_url', 'manage_url', s.manageUrl, claim(`url ${urlKey(s.manageUrl)}`, s.manageUrl, instance));
    clash('inference_url', 'inference_url', s.inferenceUrl, claim(`url ${urlKey(s.inferenceUrl)}`, s.inferenceUrl, instance));
    const mine = new Map<string, number>();
    s.devices.forEach((d, j) => {
      const key = `device ${ipKey(d.ip)} ${Number(d.logicalId)}`;
      const written = `${d.ip} #${d.logicalId}`;
      const twice = mine.get(key);
      if (own && twice !== undefined) {
        out.push({
          path: at(`devices[${j}]`),
          message: `duplicates devices[${twice}] (same device_ip and device_logical_id)`,
          clash: false,
        });
        return;
      }
      mine.set(key, j);
      clash(`devices[${j}]`, 'device', written, claim(key, written, instance));
    });
    if (own && model !== undefined && model !== instance && s.devices.length !== model.spec.devices.length) {
      out.push({
        path: at('devices'),
        message:
          `has ${s.devices.length} device${s.devices.length === 1 ? '' : 's'}, the cluster's instances ${model.spec.devices.length} ` +
          `(as ${model.name}): agents pair devices by position, so every instance has as many`,
        clash: false,
      });
    }
  }
  return out;
}

/**
 * The error an API caller gets for `found` (none: undefined): 422 when any issue is the entry's
 * own, else 409; every issue listed.
 * @example const err = conflictError(conflicts(existing, [entry])); if (err) throw err;
 */
export function conflictError(found: readonly Conflict[]): PdlinkError | undefined {
  if (found.length === 0) return undefined;
  const issues = found.map(({ path, message }) => ({ path, message }));
  if (found.some((c) => !c.clash)) return errors.unprocessable(issues);
  return new PdlinkError('conflict', `the instance clashes with the cluster: ${issues.map((i) => `${i.path}: ${i.message}`).join('; ')}`, {
    issues,
  });
}

/**
 * Throws what an API caller gets when `spec` may not join `members` (an id taken is left to the
 * membership's own check, which names it first).
 * @example refuseClashes(members, spec); admit(members, spec);
 */
export function refuseClashes(members: ReadonlyMap<number, Member>, spec: DesiredInstance): void {
  if (members.has(spec.id)) return;
  const others = [...members.values()].map((m) => ({ spec: m.spec, path: '', name: `instance ${m.id}` }));
  const refused = conflictError(conflicts(others, [{ spec, path: '', name: `instance ${spec.id}` }]));
  if (refused !== undefined) throw refused;
}
