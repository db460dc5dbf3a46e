/**
 * `pdlink.proxy` in the Coordinator file: which PD protocol the engines behind this Coordinator
 * speak. vLLM's engines take two legs one after the other (P answers `kv_transfer_params` for D);
 * SGLang's take the same request at once, told where P's bootstrap server is; which client the
 * legs go over; and the legs' bounds (the largest answer read whole, the idle connections kept).
 * The schema lives apart from the proxy so that the config reader and the proxy agree on one spelling.
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

/** The client the plain-HTTP legs go over: pdlink's own on Bun's sockets, or the platform's fetch. */
export const ENGINE_CLIENTS = ['sockets', 'fetch'] as const;
export type EngineClient = (typeof ENGINE_CLIENTS)[number];

/** `max_answer_bytes`: the largest P answer, non-streamed D answer or error body read (bytes); default 8 MiB. */
export const MAX_ANSWER_BYTES = { min: 1024, max: 2 ** 31 - 1, default: 8 * 1024 * 1024 } as const;
/** `max_idle_connections`: idle keep-alive leg connections kept over every engine (0: none kept). */
export const MAX_IDLE_CONNECTIONS = { min: 0, max: 1_000_000 } as const;

const integerIn = (range: { readonly min: number; readonly max: number }) =>
  v.pipe(
    v.number('must be an integer'),
    v.integer('must be an integer'),
    v.minValue(range.min, `must be in [${range.min}, ${range.max}]`),
    v.maxValue(range.max, `must be in [${range.min}, ${range.max}]`),
  );

export const ProxyProtocolSection = v.strictObject({
  protocol: v.optional(v.picklist(PROXY_PROTOCOLS, `must be one of ${PROXY_PROTOCOLS.join(', ')}`)),
  /** The bootstrap port of every prefill instance that does not announce its own (`bootstrap_port` in the refresh). */
  bootstrap_port: v.optional(BootstrapPort),
  /** `sockets` (the default) or `fetch`: what the legs to engines over plain http use on Bun. */
  engine_client: v.optional(v.picklist(ENGINE_CLIENTS, `must be one of ${ENGINE_CLIENTS.join(', ')}`)),
  /** Past this many bytes an answer read whole fails its request alone (the engine's fault, 502). */
  max_answer_bytes: v.optional(integerIn(MAX_ANSWER_BYTES)),
  /** Idle keep-alive connections to engines kept over all of them (default: a quarter of the fd limit, at most 1024). */
  max_idle_connections: v.optional(integerIn(MAX_IDLE_CONNECTIONS)),
});
export type ProxyProtocolSection = v.InferOutput<typeof ProxyProtocolSection>;
