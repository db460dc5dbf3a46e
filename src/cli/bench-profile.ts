/**
 * `pdlink bench --profile OUT.json`: measures the profile of one prefill and one decode instance that
 * the controller's SLA planner reads (`planner.sla.profile`), against a Coordinator in front of one P
 * and one D, and writes it as JSON (schema pdlink-pd-profile, version 1). Ctrl-C writes what was
 * measured so far.
 */
import { writeFileSync } from 'node:fs';
import * as v from 'valibot';
import { ConfigError } from '../core/errors.ts';
import { measureProfile } from '../harness/profile.ts';
import { progressFor } from '../harness/progress.ts';
import type { Endpoint } from '../harness/target.ts';
import { PdProfile } from '../schema/pd-profile.ts';
import { BENCH_HELP } from './bench-help.ts';
import { firstModel, int, num, parseLevels } from './bench-values.ts';
import { parseStringOptions } from './common.ts';
import { shutdownSignals } from './shutdown.ts';

const OPTIONS = [
  'profile',
  'base-url',
  'endpoint',
  'model',
  'request-timeout-s',
  'input-len',
  'rates',
  'decode-input-len',
  'output-len',
  'concurrency',
  'max-requests',
  'duration-s',
  'seed',
] as const;

/**
 * Runs the profile mode.
 * @example await runProfileCommand(['--profile', 'pd-profile.json', '--base-url', 'http://127.0.0.1:1025']);
 */
export async function runProfileCommand(argv: string[]): Promise<void> {
  const shutdown = shutdownSignals();
  const { values, help } = parseStringOptions(argv, OPTIONS, BENCH_HELP);
  if (help) {
    console.log(BENCH_HELP);
    return;
  }
  const out = values.profile;
  if (out === undefined || out === '') throw new ConfigError('--profile: the path of the profile to write is required');
  const baseUrl = values['base-url'];
  if (baseUrl === undefined || !/^https?:\/\/[^/]+/.test(baseUrl))
    throw new ConfigError(`--base-url: an http(s) URL is required, got ${JSON.stringify(baseUrl ?? null)}`);
  const endpoint = values.endpoint ?? 'completions';
  if (endpoint !== 'completions' && endpoint !== 'chat')
    throw new ConfigError(`--endpoint: must be completions or chat, got ${JSON.stringify(endpoint)}`);
  const plan = {
    prefillInputTokens: int(values, 'input-len', 2048, 1),
    rates: (values.rates ?? '1,2,4,8').split(',').map((r) => {
      const rate = Number(r.trim());
      if (r.trim() === '' || !Number.isFinite(rate) || rate <= 0)
        throw new ConfigError(`--rates: must be a comma-separated list of numbers > 0, got ${JSON.stringify(values.rates)}`);
      return rate;
    }),
    decodeInputTokens: int(values, 'decode-input-len', 64, 1),
    decodeOutputTokens: int(values, 'output-len', 256, 2),
    concurrency: parseLevels(values.concurrency ?? '1,2,4,8,16,32'),
    requestsPerPoint: int(values, 'max-requests', 50, 1),
    pointDurationMs: num(values, 'duration-s', 120, { min: 0, exclusive: true }) * 1000,
    seed: int(values, 'seed', 1, 0),
  };
  const model = values.model ?? (await firstModel(baseUrl));
  const requestTimeoutMs = num(values, 'request-timeout-s', 300, { min: 0, exclusive: true }) * 1000;
  const stop = new AbortController();
  void shutdown.received().then(() => stop.abort());
  const profile = await measureProfile(
    { ...plan, target: { baseUrl, endpoint: endpoint as Endpoint, model, requestTimeoutMs } },
    stop.signal,
    progressFor(process.stderr),
  );
  const complete = profile.prefill.points.length > 0 && profile.decode.points.length > 0;
  if (complete) v.parse(PdProfile, profile);
  writeFileSync(out, `${JSON.stringify(profile, null, 2)}\n`);
  for (const p of profile.prefill.points)
    console.log(
      `prefill ${p.requestsPerS}/s (${p.promptTokensPerS} prompt tokens/s): TTFT p50 ${ms(p.ttftP50Ms)}, p90 ${ms(p.ttftP90Ms)}; ${p.failed} failed`,
    );
  for (const p of profile.decode.points)
    console.log(
      `decode c${p.concurrency}: ${p.outputTokensPerS.toFixed(0)} output tokens/s, TPOT p50 ${ms(p.tpotP50Ms)}, p90 ${ms(p.tpotP90Ms)}; ${p.failed} failed`,
    );
  console.log(`pdlink bench: ${complete ? '' : 'partial (not usable by the planner) '}profile written to ${out}`);
}

function ms(x: number | null): string {
  return x === null ? '-' : `${x.toFixed(1)} ms`;
}
