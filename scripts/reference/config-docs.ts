/**
 * What each configuration key means and its default, for the generated configuration reference
 * (pages.ts). The keys themselves, their types and what they allow come from the schemas; this
 * table holds only what a schema cannot say. The reference test fails when a schema key has no
 * entry here or an entry names no key, so the table follows the schemas. A default written here
 * is taken from the constant the code uses wherever one exists.
 */
import {
  BODY_LIMIT_MB,
  CIRCUIT_COOLDOWN_MS,
  HTTP_TIMEOUT_SECONDS,
  MAX_REQUESTS,
  SINGLE_NODE_MAX_REQUESTS,
} from '../../src/schema/coordinator-config.ts';
import { LEASE_TTL_SECONDS } from '../../src/schema/store-config.ts';

export interface KeyDoc {
  /** What the key does, in one or two sentences. */
  readonly doc: string;
  /** The default as a reader writes it (JSON, or words when it depends on something). */
  readonly default?: string;
}

export interface FileDocs {
  /** The section heading: the file's name and who reads it. */
  readonly title: string;
  /** Where the file is found and how it combines with the command line. */
  readonly intro: string;
  readonly keys: Readonly<Record<string, KeyDoc>>;
}

const coordinator: FileDocs = {
  title: '`ms_coordinator.json`: the Coordinator',
  intro:
    "MindIE's layout, read unchanged: from `--config PATH`, else `MINDIE_MS_COORDINATOR_CONFIG_FILE_PATH`, else `./ms_coordinator.json` if it exists, else the embedded defaults. A command-line argument wins over the file. pdlink's own keys live in `scheduler`, `proxy_config` and `pdlink`.",
  keys: {
    http_config: { doc: 'The two listeners: management (refresh, registry, probes, metrics) and inference (the OpenAI-compatible proxy).' },
    'request_limit.max_requests': {
      doc: 'Most requests in flight through this Coordinator; one more is answered 429.',
      default: String(MAX_REQUESTS.default),
    },
    'request_limit.single_node_max_requests': {
      doc: "Most of this Coordinator's requests one instance holds at once; a request whose every candidate is full is answered 429.",
      default: String(SINGLE_NODE_MAX_REQUESTS.default),
    },
    'request_limit.body_limit': {
      doc: "Largest request body in MB (MindIE's range); a larger body is answered 413.",
      default: String(BODY_LIMIT_MB.default),
    },
    'http_config.http_timeout_seconds': { doc: 'Bound on one leg to an engine.', default: String(HTTP_TIMEOUT_SECONDS.default) },
    'scheduler.circuit_breaker.cooldown_ms': {
      doc: 'How long an open circuit refuses an instance before one trial request.',
      default: String(CIRCUIT_COOLDOWN_MS.default),
    },
    'pdlink.store.etcd.lease_ttl_seconds': {
      doc: 'Lease of the master lock and of every leadership key.',
      default: String(LEASE_TTL_SECONDS.default),
    },
  },
};

const instance: FileDocs = {
  title: 'The instance config: `pdlink instance`',
  intro:
    "MindIE's instance `config.json` (its `ServerConfig`), plus pdlink's own `pdlink` section, from `--config PATH`. A command-line argument wins over the file.",
  keys: {},
};

const topology: FileDocs = {
  title: 'The topology file: `pdlink controller`',
  intro:
    "pdlink's own JSON, from `--config PATH`: the Coordinators to keep informed, the instances, timings and P:D rates. Re-read when it changes; the same instance entry is the body of `POST /v1/cluster/instances`.",
  keys: {},
};

export const CONFIG_FILES = { coordinator, instance, topology } as const;
