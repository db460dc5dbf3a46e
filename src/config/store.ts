/**
 * Where a controller or Coordinator keeps shared state: etcd when the file's
 * `pdlink.store.etcd.endpoints` or the env `PDLINK_ETCD_ENDPOINTS` (comma-separated) names one,
 * else memory. The file wins over the env; the cluster name likewise (`pdlink.cluster`, env
 * `PDLINK_CLUSTER`, else `default`). Bad env values throw an error naming the variable (the callers add the file).
 */
import * as v from 'valibot';
import { ClusterName, COMPACTION_SECONDS, EtcdEndpoint, LEASE_TTL_SECONDS, type PdlinkSection } from '../schema/store-config.ts';

export const ETCD_ENDPOINTS_ENV = 'PDLINK_ETCD_ENDPOINTS';
export const CLUSTER_ENV = 'PDLINK_CLUSTER';

export interface StoreSettings {
  readonly endpoints: readonly string[];
  readonly cluster: string;
  readonly leaseTtlSeconds: number;
  /** etcd history older than this is compacted (0: not by pdlink). */
  readonly compactionSeconds: number;
}

/**
 * The etcd settings, or undefined for the in-memory default.
 * @example resolveStoreSettings(file.pdlink, process.env)
 */
export function resolveStoreSettings(
  section: PdlinkSection | undefined,
  env: Record<string, string | undefined>,
  fallbackEndpoints?: readonly string[],
): StoreSettings | undefined {
  const etcd = section?.store?.etcd;
  const endpoints = etcd?.endpoints ?? envEndpoints(env) ?? fallbackEndpoints;
  if (endpoints === undefined) return undefined;
  return {
    endpoints,
    cluster: section?.cluster ?? envCluster(env) ?? 'default',
    leaseTtlSeconds: etcd?.lease_ttl_seconds ?? LEASE_TTL_SECONDS.default,
    compactionSeconds: etcd?.compaction_seconds ?? COMPACTION_SECONDS.default,
  };
}

function envEndpoints(env: Record<string, string | undefined>): string[] | undefined {
  const raw = env[ETCD_ENDPOINTS_ENV];
  if (raw === undefined || raw.trim() === '') return undefined;
  const list = raw
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '');
  for (const url of list) {
    const parsed = v.safeParse(EtcdEndpoint, url);
    if (!parsed.success) throw new Error(`${ETCD_ENDPOINTS_ENV}: ${JSON.stringify(url)} ${parsed.issues[0].message}`);
  }
  return list;
}

function envCluster(env: Record<string, string | undefined>): string | undefined {
  const raw = env[CLUSTER_ENV];
  if (raw === undefined || raw === '') return undefined;
  const parsed = v.safeParse(ClusterName, raw);
  if (!parsed.success) throw new Error(`${CLUSTER_ENV}: ${parsed.issues[0].message}`);
  return raw;
}
