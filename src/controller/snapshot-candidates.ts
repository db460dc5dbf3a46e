/**
 * Which members go into the snapshot and what the Coordinator is told of each: joined, alive and
 * not draining, with the addresses parsed from its URLs. Apart from the loop because choosing and
 * describing candidates reads member facts only; the loop decides when to compose and push.
 */
import { linkedPeers } from './controller-view.ts';
import type { Member } from './member.ts';
import type { SnapshotCandidate } from './snapshot.ts';
import type { DesiredInstance } from './types.ts';

export interface InstanceAddress {
  readonly ip: string;
  readonly port: number;
  readonly metricPort: number;
}

/** Inference and management addresses, parsed once per spec: composing runs every synchronization period. */
export class AddressBook {
  readonly #addresses = new WeakMap<DesiredInstance, InstanceAddress>();

  /** @example book.of(spec); // { ip: '10.0.0.1', port: 8000, metricPort: 9000 } */
  of(spec: DesiredInstance): InstanceAddress {
    let address = this.#addresses.get(spec);
    if (address === undefined) {
      const inference = new URL(spec.inferenceUrl);
      const manage = new URL(spec.manageUrl);
      const port = (u: URL) => Number(u.port || (u.protocol === 'https:' ? 443 : 80));
      address = { ip: inference.hostname.replace(/^\[|\]$/g, ''), port: port(inference), metricPort: port(manage) };
      this.#addresses.set(spec, address);
    }
    return address;
  }
}

/**
 * The members that serve now, as the snapshot composer takes them.
 * @example composeSnapshot(snapshotCandidates(members, now, timing.heartbeatTimeoutMs, addresses));
 */
export function snapshotCandidates(
  members: ReadonlyMap<number, Member>,
  now: number,
  heartbeatTimeoutMs: number,
  addresses: AddressBook,
): SnapshotCandidate[] {
  const candidates: SnapshotCandidate[] = [];
  for (const m of members.values()) {
    // A member draining for a move leaves the snapshot as one draining for removal does.
    if (m.drain !== undefined || m.move?.phase === 'draining' || !m.joined || !m.alive(now, heartbeatTimeoutMs)) continue;
    candidates.push({
      id: m.id,
      role: m.role,
      group: m.group,
      ...addresses.of(m.spec),
      modelName: m.spec.modelName,
      staticInfo: m.spec.staticInfo,
      ...(m.spec.kvEvents === undefined ? {} : { kvEvents: m.spec.kvEvents }),
      resources: m.observation?.resources,
      linkedPeers: linkedPeers(m, members),
    });
  }
  return candidates;
}
