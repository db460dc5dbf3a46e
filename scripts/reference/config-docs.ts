/**
 * What each configuration key means and its default, for the generated configuration reference
 * (pages.ts). The keys themselves, their types and what they allow come from the schemas; this
 * table holds only what a schema cannot say, one module per file under config-docs/. The reference
 * test fails when a schema key has no entry here or an entry names no key, so the table follows the
 * schemas. A default written here is taken from the constant the code uses wherever one exists.
 */
import { CONFIG_PATH_ENV, DEFAULT_CONFIG_FILE } from '../../src/config/coordinator.ts';
import { coordinatorPdlinkKeys } from './config-docs/coordinator-pdlink.ts';
import { coordinatorSchedulerKeys } from './config-docs/coordinator-scheduler.ts';
import { coordinatorKeys } from './config-docs/coordinator.ts';
import { instanceKeys } from './config-docs/instance.ts';
import type { FileDocs } from './config-docs/shared.ts';
import { topologyKeys } from './config-docs/topology.ts';

export type { FileDocs, KeyDoc } from './config-docs/shared.ts';

const coordinator: FileDocs = {
  title: '`ms_coordinator.json`: the Coordinator',
  intro: `MindIE's layout, read unchanged: from \`--config PATH\`, else \`${CONFIG_PATH_ENV}\`, else \`./${DEFAULT_CONFIG_FILE}\` if it exists, else the embedded defaults. A command-line argument wins over the file. pdlink's own keys live in \`scheduler\`, \`proxy_config\` and \`pdlink\`.`,
  keys: { ...coordinatorKeys, ...coordinatorSchedulerKeys, ...coordinatorPdlinkKeys },
};

const instance: FileDocs = {
  title: 'The instance config: `pdlink instance`',
  intro:
    "MindIE's instance `config.json` (its `ServerConfig`), plus pdlink's own `pdlink` section, from `--config PATH`; `pdlink sim-engine` reads the same file. A command-line argument wins over the file.",
  keys: instanceKeys,
};

const topology: FileDocs = {
  title: 'The topology file: `pdlink controller`',
  intro:
    "pdlink's own JSON, from `--config PATH`: the Coordinators to keep informed, the instances, timings and P:D rates; a key it does not know is refused with its path. Re-read when it changes; the same instance entry is the body of `POST /v1/cluster/instances`.",
  keys: topologyKeys,
};

export const CONFIG_FILES = { coordinator, instance, topology } as const;
