/**
 * `pdlink.proxy` in the Coordinator file: which PD protocol the engines behind this Coordinator
 * speak. vLLM's engines take two legs one after the other (P answers `kv_transfer_params` for D);
 * SGLang's take the same request at once, told where P's bootstrap server is; and which client the
 * legs go over. The schema lives
 * apart from the proxy so that the config reader and the proxy agree on one spelling.
 */
import * as v from 'valibot';

export const PROXY_PROTOCOLS = ['vllm', 'sglang'] as const;
export type ProxyProtocol = (typeof PROXY_PROTOCOLS)[number];

/** SGLang's default `--disaggregation-bootstrap-port`. */
export const SGLANG_DEFAULT_BOOTSTRAP_PORT = 8998;

/** A TCP port as an integer in [1, 65535]. */
export const BootstrapPort = v.pipe(
  v.number('must be an integer port number'),
  v.integer('must be an integer port number'),
  v.minValue(1, 'must be in [1, 65535]'),
  v.maxValue(65535, 'must be in [1, 65535]'),
);

/** The client the plain-HTTP legs go over: pdlink's own on Bun's sockets, or the runtime's fetch. */
export const ENGINE_CLIENTS = ['sockets', 'fetch'] as const;
export type EngineClient = (typeof ENGINE_CLIENTS)[number];

export const ProxyProtocolSection = v.strictObject({
  protocol: v.optional(v.picklist(PROXY_PROTOCOLS, `must be one of ${PROXY_PROTOCOLS.join(', ')}`)),
  /** The bootstrap port of every prefill instance that does not announce its own (`bootstrap_port` in the refresh). */
  bootstrap_port: v.optional(BootstrapPort),
  /** `sockets` (the default) or `fetch`: what the legs to engines over plain http use on Bun. */
  engine_client: v.optional(v.picklist(ENGINE_CLIENTS, `must be one of ${ENGINE_CLIENTS.join(', ')}`)),
});
export type ProxyProtocolSection = v.InferOutput<typeof ProxyProtocolSection>;
