/**
 * The `pdlink` section shared by the controller's topology file and `ms_coordinator.json`: the
 * cluster's name (the store's key prefix) and the etcd that several controllers and Coordinators
 * share. Absent, everything stays in one process's memory, as before.
 */
import * as v from 'valibot';
import { ProxyProtocolSection } from './proxy-protocol.ts';

/** MindIE's master lock lapses after 10 s; pdlink's default fails over within 3 s (see election.ts). */
export const LEASE_TTL_SECONDS = { min: 1, max: 60, default: 2 } as const;
export const MAX_ETCD_ENDPOINTS = 16;
/**
 * etcd keeps every revision until something compacts it; pdlink compacts what is older than this
 * (0: leave it to etcd's --auto-compaction-retention).
 */
export const COMPACTION_SECONDS = { min: 0, max: 86_400, default: 300 } as const;

export const ClusterName = v.pipe(
  v.string('must be a string'),
  v.regex(/^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$/, 'must be 1 to 63 letters, digits, ".", "_" or "-", starting with a letter or digit'),
);

export const EtcdEndpoint = v.pipe(
  v.string('must be a string'),
  v.url('must be an http(s) URL such as http://127.0.0.1:2379'),
  v.check((u) => /^https?:\/\//i.test(u), 'must be an http(s) URL such as http://127.0.0.1:2379'),
);

export const PdlinkSection = v.strictObject({
  cluster: v.optional(ClusterName),
  /** The engines' PD protocol (see proxy-protocol.ts). */
  proxy: v.optional(ProxyProtocolSection),
  store: v.optional(
    v.strictObject({
      etcd: v.optional(
        v.strictObject({
          endpoints: v.pipe(
            v.array(EtcdEndpoint, 'must be an array of etcd client URLs'),
            v.minLength(1, 'must list at least one etcd client URL'),
            v.maxLength(MAX_ETCD_ENDPOINTS, `must list at most ${MAX_ETCD_ENDPOINTS} URLs`),
          ),
          lease_ttl_seconds: v.optional(
            v.pipe(
              v.number('must be a number'),
              v.integer('must be an integer'),
              v.minValue(LEASE_TTL_SECONDS.min, `must be in [${LEASE_TTL_SECONDS.min}, ${LEASE_TTL_SECONDS.max}]`),
              v.maxValue(LEASE_TTL_SECONDS.max, `must be in [${LEASE_TTL_SECONDS.min}, ${LEASE_TTL_SECONDS.max}]`),
            ),
          ),
          compaction_seconds: v.optional(
            v.pipe(
              v.number('must be a number'),
              v.integer('must be an integer'),
              v.minValue(COMPACTION_SECONDS.min, `must be in [${COMPACTION_SECONDS.min}, ${COMPACTION_SECONDS.max}]`),
              v.maxValue(COMPACTION_SECONDS.max, `must be in [${COMPACTION_SECONDS.min}, ${COMPACTION_SECONDS.max}]`),
            ),
          ),
        }),
      ),
    }),
  ),
});
export type PdlinkSection = v.InferOutput<typeof PdlinkSection>;
