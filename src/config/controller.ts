/**
 * Reads the controller's topology file and the MindIE files it points at (`ms_controller`,
 * `rank_table`, relative to the topology file), and resolves them into a TopologySpec; every
 * problem is a CliError naming the file and the field.
 */
import { dirname, resolve } from 'node:path';
import { CliError } from '../cli/common.ts';
import { clusterSpec } from '../controller/spec.ts';
import type { TopologySpec } from '../controller/types.ts';
import { describeIssues } from '../core/errors.ts';
import { MsControllerFile, RankTableFile, TopologyFile } from '../schema/controller-topology.ts';
import { loadConfigFile } from './load.ts';

export interface LoadedTopology {
  readonly spec: TopologySpec;
  /** The rank table's devices stay available to instances added through the API. */
  readonly rankTable: RankTableFile | undefined;
  /** The file's static_info defaults, for instances added through the API. */
  readonly staticDefaults: NonNullable<TopologyFile['static_info']>;
}

/**
 * Loads and resolves a topology file.
 * @example const { spec } = loadTopology('cluster.json');
 */
export function loadTopology(path: string): LoadedTopology {
  const file = loadConfigFile(path, TopologyFile);
  const near = (p: string) => resolve(dirname(path), p);
  const ms = file.ms_controller === undefined ? undefined : loadConfigFile(near(file.ms_controller), MsControllerFile);
  const rankTable = file.rank_table === undefined ? undefined : loadConfigFile(near(file.rank_table), RankTableFile);
  const result = clusterSpec(file, ms, rankTable);
  if (!result.ok) throw new CliError(`config file ${path}: ${describeIssues(result.issues)}`);
  return { spec: result.spec, rankTable, staticDefaults: file.static_info ?? {} };
}
