/**
 * The command line of `pdlink sim-engine`, the engine simulator: its help text and the parser that
 * turns argv into the simulator's settings (sim/engine/options.ts), naming a bad option.
 */
import { isIP } from 'node:net';
import { parseArgs } from 'node:util';
import { ConfigError } from '../core/errors.ts';
import { INT32_MAX } from '../core/limits.ts';
import { SIM_DEFAULTS, type SimEngineArgs } from '../sim/engine/options.ts';
import { parseCliPort } from './values.ts';

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
  --decode_ms_per_token MS  simulated time per generated token at a batch of 1 (default 10)
  --decode_batch_slowdown F each other generating request adds F × decode_ms_per_token
                            to every token's time                             (default 0.05)
  --prefix_cache_blocks N   full prompt blocks the prefix cache remembers (LRU); prefill
                            computes only the tokens not cached; 0 = no cache
                                                     (default: num_blocks × devices)
  --max_model_len N         longest prompt + completion in tokens             (default 4096)
  --kv_lease_ms MS          a prefill keeps its blocks this long for a decoder
                            that never says it is done                        (default 30000)
  --pull_timeout_ms MS      deadline of one KV pull                           (default 1000)
  --role_switch_ms MS       what a role change (prefill <-> decode) costs: the KV cache
                            is dropped and requests are refused with 503 this long
                                                                              (default 1000)
  --protocol vllm|sglang    the PD protocol served: vLLM's kv_transfer_params,
                            or SGLang's bootstrap rooms                       (default vllm)
  --kv_events_port PORT     publish the prefix cache's KV events as vLLM does, on a
                            ZeroMQ PUB socket at manage_ip:PORT (0 = any free port;
                            absent = no events)
  --kv_events_replay_port PORT  the ROUTER replay socket beside it (0 = any free port)
  --kv_events_encoding array|map  msgspec array_like (vLLM's releases) or tagged maps
                            (its newest code)                                (default array)
  --kv_events_hashes int|bytes    block hashes as 64-bit integers or bytes  (default int)
  --tokenizer DIR           tokenize with the model's tokenizer.json (and chat template of
                            tokenizer_config.json) in DIR, as the Coordinator does
                                          (default: four UTF-8 bytes a token, a fixed template)
  -h, --help                show this help

Faults for tests (management listener): POST /sim/faults with any of
  {"prefill_status": {"status": 500, "count": 1}}   answer the next prefill legs with a status
  {"decode_status": {"status": 503, "count": 1}}    same for decode legs
  {"stall_prefill": {"ms": 5000, "count": 1}}       hold the next prefill legs that much longer
  {"stall_role_switch": {"ms": 5000, "count": 1}}   make the next role switches last that much longer
  {"corrupt_kv": {"count": 1}}                      flip a byte of the next prefills' KV bytes
  {"decode_crash": {"after_tokens": 0}}             SIGKILL itself in the next decode leg after
                                                    that many tokens (0 = before the first byte)
DELETE /sim/faults disarms them.
`;

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
        decode_batch_slowdown: { type: 'string' },
        prefix_cache_blocks: { type: 'string' },
        max_model_len: { type: 'string' },
        kv_lease_ms: { type: 'string' },
        pull_timeout_ms: { type: 'string' },
        role_switch_ms: { type: 'string' },
        protocol: { type: 'string' },
        kv_events_port: { type: 'string' },
        kv_events_replay_port: { type: 'string' },
        kv_events_encoding: { type: 'string' },
        kv_events_hashes: { type: 'string' },
        tokenizer: { type: 'string' },
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
  if (values.protocol !== undefined && values.protocol !== 'vllm' && values.protocol !== 'sglang') {
    throw new ConfigError(`--protocol: must be vllm or sglang, got ${JSON.stringify(values.protocol)}`);
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
    decodeBatchSlowdown: fraction('decode_batch_slowdown', values.decode_batch_slowdown, SIM_DEFAULTS.decodeBatchSlowdown),
    maxModelLen: int('max_model_len', values.max_model_len, SIM_DEFAULTS.maxModelLen, 2, INT32_MAX),
    kvLeaseMs: int('kv_lease_ms', values.kv_lease_ms, SIM_DEFAULTS.kvLeaseMs, 1, INT32_MAX),
    pullTimeoutMs: int('pull_timeout_ms', values.pull_timeout_ms, SIM_DEFAULTS.pullTimeoutMs, 1, INT32_MAX),
    roleSwitchMs: int('role_switch_ms', values.role_switch_ms, SIM_DEFAULTS.roleSwitchMs, 0, 600_000),
    protocol: values.protocol === 'sglang' ? 'sglang' : SIM_DEFAULTS.protocol,
    kvEventsEncoding: oneOf('kv_events_encoding', values.kv_events_encoding, ['array', 'map'] as const, SIM_DEFAULTS.kvEventsEncoding),
    kvEventsHashes: oneOf('kv_events_hashes', values.kv_events_hashes, ['int', 'bytes'] as const, SIM_DEFAULTS.kvEventsHashes),
  };
  if (values.tokenizer !== undefined) args.tokenizer = values.tokenizer;
  if (values.kv_events_port !== undefined) args.kvEventsPort = int('kv_events_port', values.kv_events_port, 0, 0, 65535);
  if (values.kv_events_replay_port !== undefined)
    args.kvEventsReplayPort = int('kv_events_replay_port', values.kv_events_replay_port, 0, 0, 65535);
  if (values.prefix_cache_blocks !== undefined)
    args.prefixCacheBlocks = int('prefix_cache_blocks', values.prefix_cache_blocks, 0, 0, 1 << 26);
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

function oneOf<T extends string>(option: string, text: string | undefined, allowed: readonly T[], fallback: T): T {
  if (text === undefined) return fallback;
  if (!(allowed as readonly string[]).includes(text))
    throw new ConfigError(`--${option}: must be ${allowed.join(' or ')}, got ${JSON.stringify(text)}`);
  return text as T;
}

function ms(option: string, text: string | undefined, fallback: number): number {
  if (text === undefined) return fallback;
  const value = Number(text);
  if (text.trim() === '' || !Number.isFinite(value) || value < 0 || value > 60_000) {
    throw new ConfigError(`--${option}: must be a number of milliseconds in [0, 60000], got ${JSON.stringify(text)}`);
  }
  return value;
}

function fraction(option: string, text: string | undefined, fallback: number): number {
  if (text === undefined) return fallback;
  const value = Number(text);
  if (text.trim() === '' || !Number.isFinite(value) || value < 0 || value > 100) {
    throw new ConfigError(`--${option}: must be a number in [0, 100], got ${JSON.stringify(text)}`);
  }
  return value;
}

function ip(option: string, value: string): string {
  if (isIP(value) === 0) throw new ConfigError(`--${option}: must be an IPv4 or IPv6 address, got ${JSON.stringify(value)}`);
  return value;
}
