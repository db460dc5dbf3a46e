import { afterAll, describe, expect, test } from 'bun:test';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PLANNER_DEFAULTS, settingsLine } from '../controller/planner/settings.ts';
import { ConfigError } from '../core/errors.ts';
import { loadTopology } from './controller.ts';

const dir = mkdtempSync(join(tmpdir(), 'pdlink-planner-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const write = (name: string, body: unknown): string => {
  const path = join(dir, name);
  writeFileSync(path, JSON.stringify(body));
  return path;
};

const topology = (planner: unknown) => ({
  coordinators: [],
  instances: [
    {
      id: 1,
      manage_url: 'http://10.0.0.1:2000',
      inference_url: 'http://10.0.0.1:3000',
      model_name: 'm',
      server_ip: '10.0.0.1',
      devices: [{ device_logical_id: '0', device_ip: '10.0.0.1' }],
    },
  ],
  ...(planner === undefined ? {} : { planner }),
});

const PROFILE = {
  schema: 'pdlink-pd-profile',
  version: 1,
  createdAt: '2026-12-05T00:00:00.000Z',
  target: { baseUrl: 'http://127.0.0.1:1025', model: 'm' },
  prefill: {
    inputTokens: 2000,
    points: [
      { requestsPerS: 5, promptTokensPerS: 10_000, ttftP50Ms: 150, ttftP90Ms: 200, completed: 50, failed: 0 },
      { requestsPerS: 10, promptTokensPerS: 20_000, ttftP50Ms: 400, ttftP90Ms: 600, completed: 100, failed: 0 },
    ],
  },
  decode: {
    inputTokens: 64,
    outputTokens: 200,
    points: [
      { concurrency: 8, outputTokensPerS: 1000, tpotP50Ms: 7, tpotP90Ms: 8, completed: 40, failed: 0 },
      { concurrency: 32, outputTokensPerS: 2500, tpotP50Ms: 11, tpotP90Ms: 12, completed: 40, failed: 0 },
    ],
  },
};

const errorOf = (fn: () => unknown): string => {
  try {
    fn();
  } catch (err) {
    if (err instanceof ConfigError) return err.message;
    throw err;
  }
  throw new Error('no error');
};

describe('the planner section of the topology file', () => {
  test('absent: the planner is off with its defaults', () => {
    expect(loadTopology(write('none.json', topology(undefined))).spec.planner).toEqual(PLANNER_DEFAULTS);
    expect(settingsLine(PLANNER_DEFAULTS)).toBe('planner off (topology file: planner.mode)');
  });

  test('load mode: seconds become milliseconds, thresholds as given', () => {
    const { spec } = loadTopology(
      write(
        'load.json',
        topology({
          mode: 'load',
          interval_seconds: 2,
          window_seconds: 10,
          cooldown_seconds: 30,
          margin: 0.3,
          min_decode_per_group: 2,
          load: { prefill_in_flight: 3, decode_in_flight: 40 },
        }),
      ),
    );
    expect(spec.planner).toMatchObject({
      mode: 'load',
      intervalMs: 2000,
      windowMs: 10_000,
      cooldownMs: 30_000,
      margin: 0.3,
      minPrefillPerGroup: 1,
      minDecodePerGroup: 2,
      load: { prefillInFlight: 3, decodeInFlight: 40, usage: 0.9 },
      sla: undefined,
    });
    expect(settingsLine(spec.planner!)).toBe(
      'planner load: a decision every 2 s on 10 s of signals, 30 s between moves in a group, margin 0.3, at least 1 prefill and 2 decode per group; ' +
        'saturated at 3 prefills in flight per prefill instance, 40 decodes in flight per decode instance, or 0.9 of slots or KV blocks in use',
    );
  });

  test('SLA mode reads the profile beside the file: what one instance serves at the targets, interpolated', () => {
    write('profile.json', PROFILE);
    const { spec } = loadTopology(
      write('sla.json', topology({ mode: 'sla', sla: { ttft_ms: 400, tpot_ms: 10, profile: 'profile.json' } })),
    );
    // TTFT 400 ms lies halfway between 200 (10000 tokens/s) and 600 (20000); TPOT 10 ms three quarters from 8 to 12.
    expect(spec.planner!.sla).toEqual({
      ttftMs: 400,
      tpotMs: 10,
      profilePath: 'profile.json',
      capacity: { prefillTokensPerS: 15_000, decodeTokensPerS: 1750 },
    });
  });

  test('problems name the file and the field', () => {
    expect(errorOf(() => loadTopology(write('nosla.json', topology({ mode: 'sla' }))))).toContain(
      'planner.sla: is required when mode is "sla"',
    );
    expect(errorOf(() => loadTopology(write('mode.json', topology({ mode: 'auto' }))))).toContain(
      'planner.mode: must be "off", "load" or "sla"',
    );
    expect(errorOf(() => loadTopology(write('margin.json', topology({ mode: 'load', margin: 1 }))))).toContain(
      'planner.margin: must be in [0, 0.9]',
    );
    expect(errorOf(() => loadTopology(write('usage.json', topology({ mode: 'load', load: { usage: 0 } }))))).toContain(
      'planner.load.usage: must be in (0, 1]',
    );
    expect(errorOf(() => loadTopology(write('min.json', topology({ min_prefill_per_group: 0 }))))).toContain(
      'planner.min_prefill_per_group: must be in [1, 16]',
    );
    const missing = errorOf(() =>
      loadTopology(write('missing.json', topology({ mode: 'sla', sla: { ttft_ms: 1, tpot_ms: 1, profile: 'nope.json' } }))),
    );
    expect(missing).toContain('nope.json');
    expect(missing).toContain('cannot read');
    write('old.json', { ...PROFILE, version: 2 });
    expect(
      errorOf(() => loadTopology(write('oldsla.json', topology({ mode: 'sla', sla: { ttft_ms: 1, tpot_ms: 1, profile: 'old.json' } })))),
    ).toContain('version: must be 1 (a profile of another version: measure it again)');
  });
});
