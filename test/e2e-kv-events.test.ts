/**
 * Routing on the engines' own KV events, end to end: simulated engines publish their prefix caches
 * as vLLM does, the Coordinator subscribes through their refresh entries, precise_prefix sends a
 * repeated prompt to the P that holds it, and with decode-first a conversation's next turn is
 * prefilled by the D that decoded the last one (no P leg). The Coordinator and the engines tokenize
 * chats with the same tokenizer files (a small one the test writes), so text prompts route exactly too.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { until } from '../src/sim/cluster/process.ts';
import { writeWordTokenizer } from '../src/sim/engine/model/word-tokenizer.ts';
import { legsWhen, proxyPost, SimCluster } from './support/sim-cluster.ts';

const MODEL = 'kv-sim';
const BS = 16;
let cluster: SimCluster;
const tokenizerDir = writeWordTokenizer(join(mkdtempSync(join(tmpdir(), 'pdlink-kv-e2e-')), 'tokenizer'));

beforeAll(async () => {
  cluster = await SimCluster.start({
    prefill: 2,
    decode: 2,
    model: MODEL,
    kvEvents: true,
    engine: { blockTokens: BS, kvEventsEncoding: 'map', kvEventsHashes: 'bytes', tokenizer: tokenizerDir },
    coordinatorConfig: {
      scheduler: {
        tokenizers: { [MODEL]: tokenizerDir },
        policy: { prefill: 'precise_prefix', decode: 'precise_prefix' },
        conditional_disaggregation: { max_local_prefill_length: 2 * BS, decode_first: true },
      },
    },
  });
}, 90_000);

afterAll(async () => {
  await cluster?.stop();
  rmSync(join(tokenizerDir, '..'), { recursive: true, force: true });
});

interface GlobalView {
  index: { held_blocks: number };
  tenants: Record<
    string,
    Record<string, { dp_ranks: Record<string, { connected: boolean; last_seq: string | null; blocks: { stored: number } }> }>
  >;
}

const view = async (): Promise<GlobalView> =>
  (await (await cluster.fetch(`${cluster.coordinatorUrl}/global_view`, { headers: cluster.authorization() })).json()) as GlobalView;
const tokens = (n: number, seed: number): number[] => Array.from({ length: n }, (_, i) => (seed * 7919 + i * 31) % 30000);

async function complete(id: string, prompt: number[]) {
  const res = await proxyPost(cluster, '/v1/completions', { model: MODEL, prompt, max_tokens: 2 }, id);
  expect(res.status).toBe(200);
  await res.arrayBuffer();
  return legsWhen(cluster, id, (rs) => rs.length > 0 && rs.every((r) => r.outcome !== 'running'));
}

describe('routing on KV events from the simulated engines', () => {
  test('every engine is subscribed through its refresh entry', async () => {
    await until(
      async () => {
        const v = await view();
        const streams = Object.values(v.tenants['default'] ?? {}).flatMap((i) => Object.values(i.dp_ranks));
        return streams.length === 4 && streams.every((s) => s.connected) ? true : undefined;
      },
      20_000,
      () => 'four connected streams',
    );
  });

  test('a repeated prompt goes to the P whose events show it, and hits its cache', async () => {
    const prompt = tokens(8 * BS, 1);
    const first = await complete('kv-first', prompt);
    const p = first.find((r) => r.leg === 'prefill')!.engine;
    await until(
      async () => ((await view()).index.held_blocks >= 8 ? true : undefined),
      10_000,
      () => 'the first prompt indexed',
    );
    const second = await complete('kv-second', [...prompt, ...tokens(3 * BS, 2)]);
    const prefill = second.find((r) => r.leg === 'prefill')!;
    expect(prefill.engine).toBe(p);
    expect(prefill.cachedTokens).toBe(8 * BS);
  });

  test('decode-first: the next turn is prefilled by the D that holds the conversation, without a P leg', async () => {
    const turn1 = tokens(6 * BS, 3);
    const first = await complete('conv-1', turn1);
    const d = first.find((r) => r.leg === 'decode')!.engine;
    // D held the pulled blocks once it decoded: its events say so.
    await until(
      async () => {
        const v = await view();
        return Object.values(v.tenants['default']!).length > 0 ? true : undefined;
      },
      10_000,
      () => 'view',
    );
    const turn2 = [...turn1, ...tokens(BS, 4)]; // one more block: uncached 16 ≤ 32
    const second = await until(
      async () => {
        const legs = await complete(`conv-2-${Math.random()}`, turn2);
        return legs.some((r) => r.leg === 'local') ? legs : undefined;
      },
      10_000,
      () => 'a local prefill on D',
    );
    expect(second.map((r) => [r.engine, r.leg])).toEqual([[d, 'local']]);
    expect(second[0]!.cachedTokens).toBe(6 * BS);
  });

  test('chat turns, tokenized by the Coordinator as by the engines: the next turn is local on the D holding the last', async () => {
    const words = (n: number, seed: number): string =>
      Array.from({ length: n }, (_, i) =>
        String.fromCharCode(97 + ((seed + i) % 26), 97 + ((seed * 7 + i * 3) % 26), 97 + ((i * 11) % 26)),
      ).join(' ');
    const messages = [
      { role: 'system', content: words(60, 1) },
      { role: 'user', content: words(40, 2) },
    ];
    const post = async (id: string, body: unknown) => {
      const res = await proxyPost(cluster, '/v1/chat/completions', body, id);
      expect(res.status).toBe(200);
      await res.arrayBuffer();
      return legsWhen(cluster, id, (rs) => rs.length > 0 && rs.every((r) => r.outcome !== 'running'));
    };
    const first = await post('chat-1', { model: MODEL, messages, max_tokens: 2 });
    const d = first.find((r) => r.leg === 'decode')!.engine;
    const next = [...messages, { role: 'assistant', content: 'abc abd' }, { role: 'user', content: words(3, 3) }];
    const second = await until(
      async () => {
        const legs = await post(`chat-2-${Math.random()}`, { model: MODEL, messages: next, max_tokens: 2 });
        return legs.some((r) => r.leg === 'local') ? legs : undefined;
      },
      10_000,
      () => 'the next turn prefilled on D',
    );
    expect(second.map((r) => [r.engine, r.leg])).toEqual([[d, 'local']]);
    expect(second[0]!.cachedTokens).toBeGreaterThanOrEqual(6 * BS);
  });
});
