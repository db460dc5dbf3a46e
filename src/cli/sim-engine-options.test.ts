import { describe, expect, test } from 'bun:test';
import { ConfigError } from '../core/errors.ts';
import { parseSimEngineArgs, SIM_ENGINE_HELP } from './sim-engine-options.ts';
import { SIM_DEFAULTS } from '../sim/engine/options.ts';

describe('sim-engine options', () => {
  test('defaults, and every option read', () => {
    expect(parseSimEngineArgs(['--role', 'decode'])).toEqual({ help: false, role: 'decode', ...SIM_DEFAULTS });
    const args = parseSimEngineArgs([
      '--role',
      'prefill',
      '--model',
      'm',
      '--config',
      'c.json',
      '--manage_ip',
      '127.0.0.2',
      '--manage_port',
      '0',
      '--ip',
      '::1',
      '--port',
      '2000',
      '--num_blocks',
      '8',
      '--block_bytes',
      '1024',
      '--block_tokens',
      '128',
      '--prefill_ms_per_token',
      '0.5',
      '--decode_ms_per_token',
      '0',
      '--decode_batch_slowdown',
      '0.25',
      '--prefix_cache_blocks',
      '64',
      '--max_model_len',
      '100',
      '--kv_lease_ms',
      '5',
      '--pull_timeout_ms',
      '7',
      '--role_switch_ms',
      '250',
      '--protocol',
      'sglang',
      '--kv_events_port',
      '0',
      '--kv_events_replay_port',
      '7001',
      '--kv_events_encoding',
      'map',
      '--kv_events_hashes',
      'bytes',
    ]);
    expect(args).toEqual({
      help: false,
      role: 'prefill',
      model: 'm',
      config: 'c.json',
      manageIp: '127.0.0.2',
      managePort: 0,
      ip: '::1',
      port: 2000,
      numBlocks: 8,
      blockBytes: 1024,
      blockTokens: 128,
      prefillMsPerToken: 0.5,
      decodeMsPerToken: 0,
      decodeBatchSlowdown: 0.25,
      prefixCacheBlocks: 64,
      maxModelLen: 100,
      kvLeaseMs: 5,
      pullTimeoutMs: 7,
      roleSwitchMs: 250,
      protocol: 'sglang',
      kvEventsPort: 0,
      kvEventsReplayPort: 7001,
      kvEventsEncoding: 'map',
      kvEventsHashes: 'bytes',
    });
  });

  test('--help needs no role, and says it is a simulator', () => {
    expect(parseSimEngineArgs(['--help']).help).toBe(true);
    expect(SIM_ENGINE_HELP).toContain('Engine simulator (not an inference engine)');
  });

  test.each([
    [['--port', '0'], /--role: must be prefill or decode, got nothing/],
    [['--role', 'mix'], /--role: must be prefill or decode, got "mix"/],
    [['--role', 'decode', '--model', ' '], /--model: must not be empty/],
    [['--role', 'decode', '--ip', 'localhost'], /--ip: must be an IPv4 or IPv6 address/],
    [['--role', 'decode', '--port', '80'], /--port: must be in \[1024, 65535\]/],
    [['--role', 'decode', '--num_blocks', '0'], /--num_blocks: must be an integer in \[1, /],
    [['--role', 'decode', '--block_tokens', '129'], /--block_tokens: must be an integer in \[1, 128\]/],
    [['--role', 'decode', '--block_bytes', '1.5'], /--block_bytes: must be an integer/],
    [['--role', 'decode', '--decode_ms_per_token=-1'], /--decode_ms_per_token: must be a number of milliseconds/],
    [['--role', 'decode', '--prefill_ms_per_token', 'fast'], /--prefill_ms_per_token: must be a number of milliseconds/],
    [['--role', 'decode', '--decode_batch_slowdown', 'x'], /--decode_batch_slowdown: must be a number in \[0, 100\]/],
    [['--role', 'decode', '--prefix_cache_blocks=-1'], /--prefix_cache_blocks: must be an integer in \[0, /],
    [['--role', 'decode', '--bogus'], /Unknown option '--bogus'/],
  ])('%p is refused naming the option', (argv, message) => {
    expect(() => parseSimEngineArgs(argv as string[])).toThrow(ConfigError);
    expect(() => parseSimEngineArgs(argv as string[])).toThrow(message as RegExp);
  });
});
