/**
 * Reads the controller's topology file and the files it points at (MindIE's `ms_controller` and
 * `rank_table`, the SLA planner's `planner.sla.profile`, relative to the topology file), and resolves
 * them into a TopologySpec; every problem is a ConfigError naming the file and the field.
 */
import { dirname, resolve } from 'node:path';
import { ConfigError, describeIssues } from '../core/errors.ts';
import { clusterSpec } from '../controller/spec.ts';
import type { TopologySpec } from '../controller/types.ts';
import { MsControllerFile, RankTableFile, TopologyFile } from '../schema/controller-topology.ts';
import { PdProfile } from '../schema/pd-profile.ts';
import { plannerSettings } from '../controller/planner/settings.ts';
import type { ClientTlsOptions, ServerTlsOptions } from '../platform/tls-options.ts';
import { loadConfigFile } from './load.ts';
import { resolveStoreSettings, type StoreSettings } from './store.ts';
import { clientTlsOf, serverTlsOf } from './tls.ts';
import { readManagementToken } from './secret-file.ts';
import { DEFAULT_MAX_CONNECTIONS } from '../http/connection-cap.ts';

export interface LoadedTopology {
  readonly spec: TopologySpec;
  /** The rank table's devices stay available to instances added through the API. */
  readonly rankTable: RankTableFile | undefined;
  /** The file's static_info defaults, for instances added through the API. */
  readonly staticDefaults: NonNullable<TopologyFile['static_info']>;
  /** The shared etcd (`pdlink.store.etcd`, or env PDLINK_ETCD_ENDPOINTS); undefined: this controller alone. */
  readonly store: StoreSettings | undefined;
  /** `tls.server_*`: the controller's listener; `tls.client_*`: its calls to agents and Coordinators. */
  readonly tls: { readonly server?: ServerTlsOptions; readonly client?: ClientTlsOptions };
  /** `pdlink.auth.management_token_file`: required on this listener and sent to agents and Coordinators. */
  readonly managementToken?: string;
  /** `pdlink.http.max_connections` of the controller's listener. */
  readonly maxConnections: number;
}

/**
 * Loads and resolves a topology file.
 * @example const { spec } = loadTopology('cluster.json');
 */
export function loadTopology(path: string, env: Record<string, string | undefined> = process.env): LoadedTopology {
  const file = loadConfigFile(path, TopologyFile);
  const near = (p: string) => resolve(dirname(path), p);
  const ms = file.ms_controller === undefined ? undefined : loadConfigFile(near(file.ms_controller), MsControllerFile);
  const rankTable = file.rank_table === undefined ? undefined : loadConfigFile(near(file.rank_table), RankTableFile);
  const result = clusterSpec(file, ms, rankTable);
  if (!result.ok) throw new ConfigError(`config file ${path}: ${describeIssues(result.issues)}`);
  // The SLA planner's profile is read with the file (a reload reads it again).
  const profilePath = file.planner?.sla?.profile;
  const profile = profilePath === undefined ? undefined : loadConfigFile(near(profilePath), PdProfile);
  const planner = plannerSettings(file.planner, profile);
  let store: StoreSettings | undefined;
  try {
    store = resolveStoreSettings(file.pdlink, env);
  } catch (err) {
    throw new ConfigError(`config file ${path}: ${err instanceof Error ? err.message : String(err)}`);
  }
  const t = file.tls ?? {};
  const server = serverTlsOf('tls.server_tls_enable', 'tls.server_tls_items', t.server_tls_enable, t.server_tls_items);
  const client = clientTlsOf('tls.client_tls_enable', 'tls.client_tls_items', t.client_tls_enable, t.client_tls_items);
  const tls = { ...(server === undefined ? {} : { server }), ...(client === undefined ? {} : { client }) };
  const managementToken = readManagementToken(file.pdlink?.auth?.management_token_file, env);
  return {
    spec: { ...result.spec, planner },
    rankTable,
    staticDefaults: file.static_info ?? {},
    store,
    tls,
    maxConnections: file.pdlink?.http?.max_connections ?? DEFAULT_MAX_CONNECTIONS,
    ...(managementToken === undefined ? {} : { managementToken }),
  };
}
