/**
 * Conditional disaggregation end to end on a simulated cluster (one P, one D): a request whose
 * prompt is at most `max_local_prefill_length` tokens goes to D alone — no P leg, D prefills it
 * and answers the same text a P+D pair would — and a longer one takes both legs; the Coordinator's
 * pdlink_pd_path_total counts each path, and the ledger ends with nothing held.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { generatedTokens, promptHash, tokenize } from '../src/sim/engine/model/tokens.ts';
import { legsWhen, proxyPost, settled, SimCluster } from './support/sim-cluster.ts';

const MODEL = 'local-sim';
let cluster: SimCluster;

beforeAll(async () => {
  cluster = await SimCluster.start({
    prefill: 1,
    decode: 1,
    model: MODEL,
    coordinatorConfig: { scheduler: { conditional_disaggregation: { max_local_prefill_length: 64 } } },
  });
}, 60_000);

afterAll(async () => {
  await cluster?.stop();
});

async function metric(sample: string): Promise<number> {
  const text = await (await fetch(`${cluster.coordinatorUrl}/metrics`)).text();
  const line = text.split('\n').find((l) => l.startsWith(`${sample} `));
  return line === undefined ? 0 : Number(line.slice(sample.length + 1));
}

async function complete(id: string, prompt: string) {
  const res = await proxyPost(cluster, '/v1/completions', { model: MODEL, prompt, max_tokens: 4 }, id);
  expect(res.status).toBe(200);
  const body = (await res.json()) as { choices: { text: string }[] };
  expect(body.choices[0]!.text).toBe(generatedTokens(promptHash(tokenize(prompt)), 4).join(''));
  const records = await legsWhen(cluster, id, (rs) => rs.length > 0 && rs.every((r) => r.outcome !== 'running'));
  return { res, records };
}

describe('conditional disaggregation', () => {
  test('a short prompt is prefilled by D alone; a long one takes the P leg; both paths are counted', async () => {
    const localBefore = await metric('pdlink_pd_path_total{path="local"}');
    const pdBefore = await metric('pdlink_pd_path_total{path="disaggregated"}');

    const short = await complete('local-short', 'a short prompt'); // a few tokens, well under 64
    expect(short.records.map((r) => [r.engine, r.leg])).toEqual([['d0', 'local']]);
    expect(short.res.headers.get('x-pdlink-prefill')).toBe('200');
    expect(short.res.headers.get('x-pdlink-decode')).toBe('200');

    const long = await complete('local-long', 'a prompt far longer than sixty-four tokens. '.repeat(12));
    expect(long.records.map((r) => [r.engine, r.leg]).sort()).toEqual([
      ['d0', 'decode'],
      ['p0', 'prefill'],
    ]);
    expect(long.res.headers.get('x-pdlink-prefill')).toBe('100');

    expect(await metric('pdlink_pd_path_total{path="local"}')).toBe(localBefore + 1);
    expect(await metric('pdlink_pd_path_total{path="disaggregated"}')).toBe(pdBefore + 1);
    await settled(cluster);
  });
});
