/**
 * Admission's public surface, and the one function that wires it: a queue and its policies over the
 * stage room that follows the registry and the KV ledger.
 */
import type { Registry } from '../core/metrics.ts';
import { Admission, type AdmissionTimers } from './admission.ts';
import { AdmissionMetrics } from './metrics.ts';
import type { AdmissionSettings } from './settings.ts';
import { StageRoom, type RoomCluster, type RoomLedger } from './stage-room.ts';

export { Admission, SYSTEM_TIMERS, type AdmissionOptions, type AdmissionTimers, type RoomView } from './admission.ts';
export { identify, type Identity, type IdentitySources, type SuppliedIdentity } from './identity.ts';
export { AdmissionMetrics, MAX_TENANT_SERIES, OTHER_TENANT } from './metrics.ts';
export { resolveAdmissionSettings, type AdmissionSettings, type ClassPolicy, type StageLimits, type TenantPolicy } from './settings.ts';
export { StageRoom, type RoomCluster, type RoomLedger, type RoomRecord, type StageLoad } from './stage-room.ts';
export type * from './types.ts';

export interface AdmissionParts {
  readonly settings: AdmissionSettings;
  readonly cluster: RoomCluster;
  readonly ledger: RoomLedger;
  /** `request_limit.single_node_max_requests`. */
  readonly maxPerInstance: number;
  /** `request_limit.max_requests`. */
  readonly maxInFlight: number;
  readonly metrics?: Registry;
  readonly timers?: AdmissionTimers;
}

/**
 * Admission over a cluster and a ledger; `close()` refuses what waits and stops following both.
 * @example const admission = createAdmission({ settings, cluster: registry, ledger, maxPerInstance: 1000, maxInFlight: 10_000, metrics });
 */
export function createAdmission(parts: AdmissionParts): Admission & { readonly room: StageRoom } {
  let admission: Admission | undefined;
  const room = new StageRoom(parts.cluster, parts.ledger, parts.settings.stages, parts.maxPerInstance, () => admission?.dispatch());
  const created = new Admission({
    settings: parts.settings,
    room,
    maxInFlight: parts.maxInFlight,
    ...(parts.timers === undefined ? {} : { timers: parts.timers }),
    ...(parts.metrics === undefined
      ? {}
      : {
          metrics: new AdmissionMetrics(
            parts.metrics,
            parts.settings.classes.map((c) => c.name),
            parts.settings.tenants.keys(),
            () => created.snapshot(),
          ),
        }),
  });
  admission = created;
  const close = created.close.bind(created);
  return Object.assign(created, {
    room,
    close(): void {
      close();
      room.close();
    },
  });
}
