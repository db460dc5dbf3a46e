/**
 * The bounds pdlink's inputs share, in one place so every check and every message agrees: the int32
 * range of timers and of the C ABI's millisecond and count fields, the nesting and body-size limits
 * of the JSON it reads, and the link secret and link-port caps the runtime accepts (pdrt.h).
 */

/**
 * The largest positive int32, 2^31−1: the longest delay `setTimeout` honours (longer ones fire at
 * once) and the largest value of every int32 field of the C ABI (timeouts, link-port caps).
 */
export const INT32_MAX = 0x7fffffff;

/** Largest uint64: the range of LLM-DataDist cluster ids, and of the wire's 64-bit ids. */
export const UINT64_MAX = (1n << 64n) - 1n;

/**
 * Deepest nesting of arrays and objects accepted in any JSON pdlink reads: `[]` is 1 level,
 * `{"a":[]}` 2. Legitimate bodies stay far below it (a refresh snapshot or a role post nests 5
 * levels, an OpenAI chat body with tools and a JSON-schema `response_format` rarely 30); 128 is
 * also serde_json's default. JSON.stringify in Bun overflows somewhere above 10,000.
 */
export const MAX_JSON_DEPTH = 128;

/** Largest role body: 96 nodes of 16 devices need about 150 KiB; MindIE's own limit is 1–20 MB. */
export const ROLE_BODY_LIMIT_BYTES = 8 * 1024 * 1024;
/** Largest `/v1/links/*` body: 16 clusters need about 2 KiB; room for clients that send more. */
export const LINKS_BODY_LIMIT_BYTES = 256 * 1024;
/** An instance entry is small; 1 MiB leaves room for 64 devices with long addresses many times over. */
export const CONTROLLER_BODY_LIMIT_BYTES = 1024 * 1024;
/** Largest body of a small control request (register a cache, arm a fault, release blocks). */
export const SMALL_BODY_LIMIT_BYTES = 64 * 1024;

/** PDRT_SECRET_MIN / PDRT_SECRET_MAX: bytes of a cluster secret. */
export const SECRET_MIN = 16;
export const SECRET_MAX = 4096;

/**
 * Caps of a context's link port (pdrt_config); an absent field takes the runtime's default. Each is
 * an int32 in [1, INT32_MAX].
 */
export interface LinkPortLimits {
  /** An unfinished incoming handshake is dropped after this (default 5000). */
  readonly handshakeTimeoutMs?: number;
  /** A served data connection idle this long is closed (default 60000). */
  readonly idleTimeoutMs?: number;
  /** Links served in total (default 1024), and from one peer address (default 64). */
  readonly maxLinks?: number;
  readonly maxLinksPerPeer?: number;
  /** Incoming handshakes in progress in total (default 256), and from one peer address (default 32). */
  readonly maxHandshakes?: number;
  readonly maxHandshakesPerPeer?: number;
  /** Data connections served to one peer address (default 256), and in total (default 1024). */
  readonly maxConnsPerPeer?: number;
  readonly maxConns?: number;
}
