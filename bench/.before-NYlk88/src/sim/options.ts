/**
 * Command-line options of `pdlink sim-engine`, the engine simulator: its role and model, where
 * its two listeners are, the simulated KV cache's geometry and the simulated compute speed.
 */
import { isIP } from 'node:net';
import { parseArgs } from 'node:util';
import { parseCliPort } from '../core/cli-values.ts';
import { ConfigError } from '../core/errors.ts';
import { INT32_MAX } from '../core/limits.ts';
import type { SimRole } from './types.ts';

export const SIM_ENGINE_HELP = `Usage: pdlink sim-engine --role prefill|decode [options]

Engine simulator (not an inference engine): an OpenAI-compatible server that behaves like a
vLLM instance with a pull-mode KV connector, for tests, benchmarks and demos of pdlink. It embeds
the pdlink instance agent (role API, links, KV transfer API) and moves real bytes through it:
  - a request with kv_transfer_params.do_remote_decode (the prefill leg) is "prefilled" by
    writing deterministic bytes derived from the prompt into free blocks of a registered KV
    cache; the answer holds one token and kv_transfer_params naming those blocks;
  - a request carrying those kv_transfer_params (the decode leg) pulls the blocks over the link
    to the prefiller, verifies every byte, then generates max_tokens simulated tokens;
  - any other request is served by the simulator alone.
Listeners: management (role API, /v1/links, /v1/kv, /v1/status, probes, /metrics, and the
simulator's /sim/faults, /sim/status, /sim/requests, /sim/kv/release) and inference
(POST /v1/completions, POST /v1/chat/completions, GET /v1/models, GET /health).

Options:
  --role ROLE               prefill or decode (required)
  --model NAME              model name the simulator answers to    (default pdlink-sim)
  --config PATH             instance configuration (same file as pdlink instance: devices,
                            pdlink.link_base_port, ServerConfig addresses)
  --manage_ip IP            management listener address (as pdlink instance)
  --manage_port PORT        management listener port (as pdlink instance; 0 = any free port)
  --ip IP                   inference listener address (default: ServerConfig.ipAddress,
                            then 127.0.0.1)
  --port PORT               inference listener port (default: ServerConfig.port, then 1025;
                            0 = any free port)
  --num_blocks N            simulated KV blocks per device                    (default 1024)
  --block_bytes N           bytes per simulated KV block                      (default 16384)
  --block_tokens N          prompt tokens per KV block                        (default 16)
  --prefill_ms_per_token MS simulated prefill time per prompt token           (default 0.1)
  --decode_ms_per_token MS  simulated time per generated token                (default 10)
  --max_model_len N         longest prompt + completion in tokens             (default 4096)
  --kv_lease_ms MS          a prefill keeps its blocks this long for a decoder
                            that never says it is done                        (default 30000)
  --pull_timeout_ms MS      deadline of one KV pull                           (default 1000)
  -h, --help                show this help

Faults for tests (management listener): POST /sim/faults with any of
  {"prefill_status": {"status": 500, "count": 1}}   answer the next prefill legs with a status
  {"decode_status": {"status": 503, "count": 1}}    same for decode legs
  {"stall_prefill": {"ms": 5000, "count": 1}}       hold the next prefill legs that much longer
  {"corrupt_kv": {"count": 1}}                      flip a byte of the next prefills' KV bytes
  {"decode_crash": {"after_tokens": 0}}             SIGKILL itself in the next decode leg after
                                                    that many tokens (0 = before the first byte)
DELETE /sim/faults disarms them.
`;

export interface SimEngineArgs {
  help: boolean;
  role: SimRole;
  model: string;
  config?: string;
  manageIp?: string;
  managePort?: number;
  ip?: string;
  port?: number;
  numBlocks: number;
  blockBytes: number;
  blockTokens: number;
  prefillMsPerToken: number;
  decodeMsPerToken: number;
  maxModelLen: number;
  kvLeaseMs: number;
  pullTimeoutMs: number;
}

/** Defaults of the simulated engine's numeric options. */
export const SIM_DEFAULTS = {
  model: 'pdlink-sim',
  numBlocks: 1024,
  blockBytes: 16_384,
  blockTokens: 16,
  prefillMsPerToken: 0.1,
  decodeMsPerToken: 10,
  maxModelLen: 4096,
  kvLeaseMs: 30_000,
  pullTimeoutMs: 1000,
} as const;

/**
 * Parses the simulator's arguments; a ConfigError names the bad option.
 * @example parseSimEngineArgs(['--role', 'prefill', '--port', '0'])
 */
export function parseSimEngineArgs(argv: string[]): SimEngineArgs {
  let values;
  try {
    values = parseArgs({
      args: argv,
      strict: true,
      allowPositionals: false,
      options: {
        role: { type: 'string' },
        model: { type: 'string' },
        config: { type: 'string' },
        manage_ip: { type: 'string' },
        manage_port: { type: 'string' },
        ip: { type: 'string' },
        port: { type: 'string' },
        num_blocks: { type: 'string' },
        block_bytes: { type: 'string' },
        block_tokens: { type: 'string' },
        prefill_ms_per_token: { type: 'string' },
        decode_ms_per_token: { type: 'string' },
        max_model_len: { type: 'string' },
        kv_lease_ms: { type: 'string' },
        pull_timeout_ms: { type: 'string' },
        help: { type: 'boolean', short: 'h' },
      },
    }).values;
  } catch (cause) {
    throw new ConfigError(`${(cause as Error).message}\n\n${SIM_ENGINE_HELP}`);
  }
  const help = values.help === true;
  if (!help && values.role !== 'prefill' && values.role !== 'decode') {
    throw new ConfigError(`--role: must be prefill or decode, got ${values.role === undefined ? 'nothing' : JSON.stringify(values.role)}`);
  }
  if (values.model !== undefined && values.model.trim() === '') throw new ConfigError('--model: must not be empty');
  const args: SimEngineArgs = {
    help,
    role: values.role === 'decode' ? 'decode' : 'prefill',
    model: values.model ?? SIM_DEFAULTS.model,
    numBlocks: int('num_blocks', values.num_blocks, SIM_DEFAULTS.numBlocks, 1, 1 << 24),
    blockBytes: int('block_bytes', values.block_bytes, SIM_DEFAULTS.blockBytes, 1, 64 * 1024 * 1024),
    blockTokens: int('block_tokens', values.block_tokens, SIM_DEFAULTS.blockTokens, 1, 128),
    prefillMsPerToken: ms('prefill_ms_per_token', values.prefill_ms_per_token, SIM_DEFAULTS.prefillMsPerToken),
    decodeMsPerToken: ms('decode_ms_per_token', values.decode_ms_per_token, SIM_DEFAULTS.decodeMsPerToken),
    maxModelLen: int('max_model_len', values.max_model_len, SIM_DEFAULTS.maxModelLen, 2, INT32_MAX),
    kvLeaseMs: int('kv_lease_ms', values.kv_lease_ms, SIM_DEFAULTS.kvLeaseMs, 1, INT32_MAX),
    pullTimeoutMs: int('pull_timeout_ms', values.pull_timeout_ms, SIM_DEFAULTS.pullTimeoutMs, 1, INT32_MAX),
  };
  if (values.config !== undefined) args.config = values.config;
  if (values.manage_ip !== undefined) args.manageIp = ip('manage_ip', values.manage_ip);
  if (values.manage_port !== undefined) args.managePort = parseCliPort('manage_port', values.manage_port);
  if (values.ip !== undefined) args.ip = ip('ip', values.ip);
  if (values.port !== undefined) args.port = parseCliPort('port', values.port);
  return args;
}

function int(option: string, text: string | undefined, fallback: number, min: number, max: number): number {
  if (text === undefined) return fallback;
  if (!/^\d+$/.test(text) || Number(text) < min || Number(text) > max)
    throw new ConfigError(`--${option}: must be an integer in [${min}, ${max}], got ${JSON.stringify(text)}`);
  return Number(text);
}

function ms(option: string, text: string | undefined, fallback: number): number {
  if (text === undefined) return fallback;
  const value = Number(text);
  if (text.trim() === '' || !Number.isFinite(value) || value < 0 || value > 60_000) {
    throw new ConfigError(`--${option}: must be a number of milliseconds in [0, 60000], got ${JSON.stringify(text)}`);
  }
  return value;
}

function ip(option: string, value: string): string {
  if (isIP(value) === 0) throw new ConfigError(`--${option}: must be an IPv4 or IPv6 address, got ${JSON.stringify(value)}`);
  return value;
}
