/**
 * The instance agent's configuration file: MindIE's `config.json` (`ServerConfig` holds the
 * listener addresses) plus pdlink's own `pdlink` section for the device runtime.
 */
import { INT32_MAX } from '../core/limits.ts';
import { isIP } from 'node:net';
import { AllowedNetworks, HttpCaps, SecretFilePath } from './security.ts';
import * as v from 'valibot';
import { TlsItems } from './tls-items.ts';

/** First link port: device `d` listens on `device_ip:(link_base_port + d)`. */
export const DEFAULT_LINK_BASE_PORT = 26000;
/** Devices one agent drives at most (LLM-DataDist's per-host device count is far below). */
export const MAX_DEVICES = 64;

const Ip = v.pipe(
  v.string('must be an IP address'),
  v.check((s) => isIP(s) !== 0, 'must be an IPv4 or IPv6 address'),
);
const Port = v.pipe(
  v.number('must be an integer port'),
  v.integer('must be an integer port'),
  v.minValue(1024, 'must be in [1024, 65535]'),
  v.maxValue(65535, 'must be in [1024, 65535]'),
);
const Uint64 = v.union(
  [
    v.pipe(v.number(), v.safeInteger(), v.minValue(0)),
    v.pipe(
      v.string(),
      v.regex(/^\d{1,20}$/),
      v.check((s) => BigInt(s) < 1n << 64n),
    ),
  ],
  'must be an unsigned 64-bit integer (number or decimal string)',
);

const LinkCap = v.pipe(
  v.number('must be an integer'),
  v.integer('must be an integer'),
  v.minValue(1, `must be in [1, ${INT32_MAX}]`),
  v.maxValue(INT32_MAX, `must be in [1, ${INT32_MAX}]`),
);

/** `pdlink.tls` of an instance config (see InstanceConfigFile); `pdlink sim-cluster --tls_config` reads one alone. */
export const InstanceTlsSection = v.object({
  management_tls_enable: v.optional(v.boolean('must be a boolean')),
  management_tls_items: v.optional(TlsItems),
  inference_tls_enable: v.optional(v.boolean('must be a boolean')),
  inference_tls_items: v.optional(TlsItems),
  client_tls_enable: v.optional(v.boolean('must be a boolean')),
  client_tls_items: v.optional(TlsItems),
});

const Device = v.object({
  device_logical_id: v.union(
    [
      v.pipe(v.number(), v.integer(), v.minValue(0), v.maxValue(65535)),
      v.pipe(
        v.string(),
        v.regex(/^\d{1,5}$/),
        v.check((s) => Number(s) <= 65535),
      ),
    ],
    'must be an integer in [0, 65535] (number or decimal string)',
  ),
  device_ip: Ip,
  cluster_id: v.optional(Uint64),
});

export type InstanceTlsSection = v.InferOutput<typeof InstanceTlsSection>;

export const InstanceConfigFile = v.pipe(
  v.custom<Record<string, unknown>>((x) => typeof x === 'object' && x !== null && !Array.isArray(x), 'must be a JSON object'),
  v.object({
    ServerConfig: v.optional(
      v.object({
        ipAddress: v.optional(Ip),
        managementIpAddress: v.optional(Ip),
        port: v.optional(Port),
        managementPort: v.optional(Port),
        /** MindIE's switch for listening on every interface (0.0.0.0, ::); off unless set. */
        allowAllZeroIpListening: v.optional(v.boolean('must be a boolean')),
      }),
    ),
    pdlink: v.optional(
      v.object({
        /** Only with a single device: that device's cluster id instead of the computed one. */
        cluster_id: v.optional(Uint64),
        devices: v.optional(
          v.pipe(
            v.array(Device),
            v.minLength(1, 'must name at least one device'),
            v.maxLength(MAX_DEVICES, `at most ${MAX_DEVICES} devices`),
          ),
        ),
        link_base_port: v.optional(Port),
        /** KV transfers: their own worker pool, the same-host shared-memory path, chunking. */
        transfers: v.optional(
          v.object({
            threads: v.optional(v.pipe(v.number(), v.integer(), v.minValue(1), v.maxValue(64))),
            same_host_fastpath: v.optional(v.boolean('must be a boolean')),
            chunk_mib: v.optional(v.pipe(v.number(), v.integer(), v.minValue(1), v.maxValue(1024))),
            parallel_slices: v.optional(v.pipe(v.number(), v.integer(), v.minValue(1), v.maxValue(16))),
          }),
        ),
        /** Secrets, each read from a file so it is never on a command line. */
        auth: v.optional(
          v.object({
            /** The cluster secret every device link must prove (env PDLINK_LINK_SECRET_FILE). */
            link_secret_file: v.optional(v.pipe(v.string('must be a file path'), v.minLength(1, 'must be a file path'))),
            /** The management listener's bearer token (env PDLINK_MANAGEMENT_TOKEN_FILE). */
            management_token_file: v.optional(SecretFilePath),
          }),
        ),
        /**
         * TLS of the agent's listeners and of its outgoing calls, with MindIE's item set
         * (`ca_cert`, `tls_cert`, `tls_key`, `tls_passwd`, `tls_crl`): `management_*` for the
         * management listener, `inference_*` for a simulated engine's inference listener, `client_*`
         * for calls to other instances' management listeners.
         */
        tls: v.optional(InstanceTlsSection),
        /** Peer addresses role posts and link calls may name (CIDRs); unset = all but the ones always refused. */
        allowed_instance_networks: v.optional(AllowedNetworks),
        /** Caps of the management listener. */
        http: v.optional(HttpCaps),
        /** Caps of the device link ports (unset keys take the runtime's defaults). */
        link_port: v.optional(
          v.object({
            handshake_timeout_ms: v.optional(LinkCap),
            idle_timeout_ms: v.optional(LinkCap),
            max_links: v.optional(LinkCap),
            max_links_per_peer: v.optional(LinkCap),
            max_handshakes: v.optional(LinkCap),
            max_handshakes_per_peer: v.optional(LinkCap),
            max_conns_per_peer: v.optional(LinkCap),
            max_conns: v.optional(LinkCap),
          }),
        ),
        pool: v.optional(
          v.object({
            threads: v.optional(v.pipe(v.number(), v.integer(), v.minValue(1), v.maxValue(64))),
            batch_window_ms: v.optional(v.pipe(v.number(), v.minValue(0), v.maxValue(1000))),
            max_batch: v.optional(v.pipe(v.number(), v.integer(), v.minValue(1), v.maxValue(16))),
            encoding: v.optional(v.picklist(['clone', 'msgpack', 'shared'])),
            link_threads: v.optional(v.picklist(['native', 'workers'])),
          }),
        ),
      }),
    ),
  }),
);

export type InstanceConfig = v.InferOutput<typeof InstanceConfigFile>;
