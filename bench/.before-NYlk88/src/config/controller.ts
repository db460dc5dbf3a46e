/**
 * Reads the controller's topology file and the MindIE files it points at (`ms_controller`,
 * `rank_table`, relative to the topology file), and resolves them into a TopologySpec; every
 * problem is a ConfigError naming the file and the field.
 */
import { dirname, resolve } from 'node:path';
import { ConfigError, describeIssues } from '../core/errors.ts';
import { clusterSpec } from '../controller/spec.ts';
import type { TopologySpec } from '../controller/types.ts';
import { MsControllerFile, RankTableFile, TopologyFile } from '../schema/controller-topology.ts';
import type { ClientTlsOptions, ServerTlsOptions } from '../core/tls-options.ts';
import { loadConfigFile } from './load.ts';
import { resolveStoreSettings, type StoreSettings } from './store.ts';
import { clientTlsOf, serverTlsOf } from './tls.ts';

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
  return { spec: result.spec, rankTable, staticDefaults: file.static_info ?? {}, store, tls };
}
