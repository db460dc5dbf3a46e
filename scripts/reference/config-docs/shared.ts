/**
 * The shapes of the configuration reference's description table, and the entries several files
 * share: MindIE's TLS item set (five keys under every `*_tls_items`), the `pdlink` section the
 * Coordinator and the controller both read (cluster name, etcd, management token, listener cap,
 * the proxy's protocol keys), and the defaults that live only in the native runtime's C header.
 * Written once here so that a key means the same thing wherever it appears.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { CLUSTER_ENV, ETCD_ENDPOINTS_ENV } from '../../../src/config/store.ts';
import { MANAGEMENT_TOKEN_ENV } from '../../../src/core/secret-env.ts';
import { DEFAULT_MAX_CONNECTIONS } from '../../../src/http/connection-cap.ts';
import { COMPACTION_SECONDS, LEASE_TTL_SECONDS } from '../../../src/schema/store-config.ts';

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

export type KeyDocs = Record<string, KeyDoc>;

/** Which end of a connection an item set configures. */
export type TlsSide = 'server' | 'client';

/**
 * The `*_tls_enable` key and the five keys of its `*_tls_items`, for one listener or client; `note`
 * ends the enable key's description.
 * @example tlsKeys('tls_config.request_server', 'server', 'the inference listener')
 */
export function tlsKeys(prefix: string, side: TlsSide, what: string, note = ''): KeyDocs {
  const items = `${prefix}_tls_items`;
  const server = side === 'server';
  const tail = note === '' ? '' : ` ${note}`;
  return {
    [`${prefix}_tls_enable`]: {
      doc: server
        ? `true serves ${what} over TLS with \`${items}\` (\`tls_cert\` and \`tls_key\` required); false serves plain HTTP.${tail}`
        : `true puts ${what} on https, verifying the server with \`${items}.ca_cert\` and presenting its \`tls_cert\`.${tail}`,
      default: 'false',
    },
    [items]: {
      doc: `File paths (PEM) for ${what}, read at start only when \`${prefix}_tls_enable\` is true; a file that is missing, unreadable, empty or not what its key says stops the start, naming the key.`,
    },
    [`${items}.ca_cert`]: {
      doc: server
        ? 'CA certificates clients must chain to: set, the listener requires a client certificate and refuses the handshake without one (probes included). A runtime that cannot enforce this (Deno) refuses to start.'
        : "CA certificates the server's certificate must chain to, instead of the system's.",
      default: server ? 'none: no client certificate asked' : "the system's CAs",
    },
    [`${items}.tls_cert`]: {
      doc: server
        ? "This listener's certificate, with any intermediates; it must name the address clients use (subjectAltName)."
        : 'The client certificate presented to servers that require one; goes with `tls_key` (both or neither).',
      ...(server ? {} : { default: 'none: no client certificate' }),
    },
    [`${items}.tls_key`]: {
      doc: 'The private key of `tls_cert`; an encrypted key needs `tls_passwd`.',
    },
    [`${items}.tls_passwd`]: {
      doc: 'A file holding the passphrase of an encrypted `tls_key` (a final newline is not part of it); a passphrase that does not decrypt the key stops the start.',
    },
    [`${items}.tls_crl`]: {
      doc: `A CRL of the \`ca_cert\` CA: a certificate it lists is refused in the handshake. Needs \`ca_cert\`; Deno cannot check one and refuses to start.`,
    },
  };
}

/** The reference runtime's default of a link-port cap, as native/src/internal.h defines it. */
export function nativeDefault(name: string): string {
  const header = readFileSync(join(import.meta.dirname, '../../../native/src/internal.h'), 'utf8');
  const match = new RegExp(`^#define ${name}\\s+(\\d+)\\b`, 'm').exec(header);
  if (match === null) throw new Error(`native/src/internal.h defines no ${name}`);
  return match[1]!;
}

/**
 * The keys of the `pdlink` section shared by `ms_coordinator.json` and the topology file.
 * @example sharedPdlinkKeys('the Coordinator', 'master lock')
 */
export function sharedPdlinkKeys(process: string, leaseHolder: string): KeyDocs {
  return {
    pdlink: { doc: `pdlink's own settings for ${process}: the cluster's name and its etcd, secrets, listener caps.` },
    'pdlink.cluster': {
      doc: `The cluster's name: with etcd, every key lives under \`/pdlink/<cluster>/\`, so clusters can share one etcd; the controllers and Coordinators of one cluster name the same. Env \`${CLUSTER_ENV}\` when the file names none.`,
      default: '"default"',
    },
    'pdlink.store': { doc: "Where state shared between processes lives; absent (and no env), in this process's memory alone." },
    'pdlink.store.etcd': {
      doc: `The etcd shared by several controllers and Coordinators (high availability). Env \`${ETCD_ENDPOINTS_ENV}\` (comma-separated URLs) when the file names none.`,
    },
    'pdlink.store.etcd.endpoints': {
      doc: 'Client URLs of the etcd members (http:// or https://); present, the state shared between processes lives in that etcd.',
    },
    'pdlink.store.etcd.lease_ttl_seconds': {
      doc: `Lease of the ${leaseHolder}, renewed every quarter of it: a dead holder is replaced about this long after it stopped. A default etcd grants at least 2 s, so 1 gets 2.`,
      default: String(LEASE_TTL_SECONDS.default),
    },
    'pdlink.store.etcd.compaction_seconds': {
      doc: "etcd keeps every revision of every key until it is compacted; every period each pdlink process on it compacts the history older than one period, so what pdlink writes never piles up toward etcd's quota. 0 leaves it to etcd (`--auto-compaction-retention`); it compacts every client's history, so on an etcd shared with watchers that lag longer, raise it or use 0.",
      default: String(COMPACTION_SECONDS.default),
    },
    'pdlink.auth': { doc: 'Secrets, each read from a file so it is never on a command line nor in a log.' },
    'pdlink.auth.management_token_file': {
      doc: `A file holding one token on one line: every management route then needs \`Authorization: Bearer <token>\` (401 otherwise; probes exempt). Env \`${MANAGEMENT_TOKEN_ENV}\` wins; a missing or empty file stops the start.`,
      default: 'none: the listener is open',
    },
    'pdlink.http': { doc: "Caps of this process's HTTP listeners." },
    'pdlink.http.max_connections': {
      doc: 'Requests served at once per listener; past it a new request is answered 503 with `Retry-After: 1` at once, while the probes always answer. Keep `ulimit -n` well above it.',
      default: String(DEFAULT_MAX_CONNECTIONS),
    },
  };
}
