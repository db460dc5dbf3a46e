/**
 * Question: what does routing on KV events add to the CPU of a proxied request? Goal (the KV-routing
 * issue): precise_prefix ≤ 1.15× the CPU per request of round_robin, with the prompt given as token
 * ids and given as text that the Coordinator tokenizes with the model's tokenizer.json.
 *
 * Set-up: the proxy CPU benchmark's fast fake engines (proxy-engines.ts, CPU 0) and two `pdlink
 * coordinator` processes in front of them (CPU 1): round_robin (no tokenizer), and precise_prefix
 * with the simulator's word tokenizer configured (src/sim/engine/model/word-tokenizer.ts: one
 * pseudo-word, one token) and both engines' refresh entries naming a KV-event endpoint, so every
 * request's prompt is keyed in the engines' block size and matched (the index is empty: a request
 * pays the keying, which is the cost, and a first-block miss). Bodies: completions of PROMPT_TOKENS
 * tokens as ids, or as that many pseudo-words of text. Each round sends REQUESTS streamed PD
 * requests at concurrency 32 of each form to each Coordinator, alternating which goes first; CPU is
 * the process's time on CPU (/proc schedstat) over the requests. Figures: medians of per-round ratios.
 *
 * Run: bun bench/proxy-cpu-kv.bench.ts → bench/results/proxy-cpu-kv.{json,md}
 */
import { loadavg } from 'node:os';
import { join } from 'node:path';
import { rmSync } from 'node:fs';
import { writeWordTokenizer } from '../src/sim/engine/model/word-tokenizer.ts';
import { markdownTable, spread, writeResults } from './lib.ts';
import { dir, startBun, startPdlink, type Host } from './proxy-cpu-hosts.ts';
import { cpuNs } from './proxy-cpu-proc.ts';
import { concurrent, MODEL, type Send } from './proxy-cpu-client.ts';

const ROUNDS = Number(process.env['PROXY_CPU_KV_ROUNDS'] ?? 6);
const REQUESTS = Number(process.env['PROXY_CPU_KV_REQUESTS'] ?? 1000);
const LENGTHS = (process.env['PROXY_CPU_KV_TOKENS'] ?? '1024,8192').split(',').map(Number);
const WARM = Number(process.env['PROXY_CPU_KV_WARM'] ?? 3000);
const GOAL = 1.15;
const BLOCK_SIZE = 16;

type Mode = 'roundRobin' | 'precise';
type Form = 'ids' | 'text';
const LABELS: Record<Mode, string> = { roundRobin: 'round_robin', precise: 'precise_prefix (KV events, tokenizer)' };

const word = (i: number): string => {
  const l = 'abcdefghijklmnopqrstuvwxyz';
  const k = (i * 7919) % 17576;
  return l[Math.floor(k / 676)]! + l[Math.floor(k / 26) % 26]! + l[k % 26]!;
};
function body(form: Form, tokens: number): string {
  const prompt =
    form === 'ids'
      ? Array.from({ length: tokens }, (_, i) => 7 + ((i * 7919) % 17576))
      : Array.from({ length: tokens }, (_, i) => word(i)).join(' ');
  return JSON.stringify({ model: MODEL, prompt, max_tokens: 16, stream: true });
}

let seq = 0;
function sender(url: string, text: string): Send {
  return async () => {
    const res = await fetch(`${url}/v1/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-request-id': `kv-${seq++}` },
      body: text,
    });
    const answer = await res.text();
    if (res.status !== 200 || !answer.endsWith('data: [DONE]\n\n')) throw new Error(`bad answer ${res.status}: ${answer.slice(0, 200)}`);
  };
}

/**
 * The engines as both Coordinators see them (room for the longest prompt); with `events`, each names
 * a KV-event endpoint (nothing listens there: the sources exist, the index stays empty).
 */
async function refresh(host: Host, engines: { urls: Record<string, string> }, events: boolean): Promise<void> {
  const management = host.proc.urls['management']!;
  const instance = (id: number, url: string, role: number, label: number, peers: number[], port: number) => ({
    id,
    ip: '127.0.0.1',
    port: new URL(url).port,
    metric_port: new URL(url).port,
    model_name: MODEL,
    ...(events ? { kv_events_endpoint: `tcp://127.0.0.1:${port}` } : {}),
    static_info: {
      group_id: 0,
      max_seq_len: 65536,
      max_output_len: 1024,
      total_slots_num: 5000,
      total_block_num: 1000000,
      block_size: BLOCK_SIZE,
      label,
      role,
    },
    dynamic_info: { avail_slots_num: 5000, avail_block_num: 1000000, peers },
  });
  const res = await fetch(`${management}/v1/instances/refresh`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({
      ids: [0, 1],
      instances: [instance(0, engines.urls['prefill']!, 80, 2, [1], 1), instance(1, engines.urls['decode']!, 68, 3, [0], 2)],
    }),
  });
  if (res.status !== 200) throw new Error(`refresh answered ${res.status}: ${await res.text()}`);
}

const tokenizer = writeWordTokenizer(join(dir, 'tokenizer'));
const engines = await startBun('engines', 'proxy-engines.ts', [], ['prefill', 'decode']);
const hosts: Record<Mode, Host> = {
  roundRobin: await startPdlink(engines, undefined, false, { scheduler: { policy: { prefill: 'round_robin', decode: 'load_balance' } } }),
  precise: await startPdlink(engines, undefined, false, {
    scheduler: { policy: { prefill: 'precise_prefix', decode: 'precise_prefix' }, tokenizers: { [MODEL]: tokenizer } },
  }),
};
const loadBefore = loadavg();
try {
  await refresh(hosts.roundRobin, engines, false);
  await refresh(hosts.precise, engines, true);
  const bodies = new Map<string, string>();
  for (const tokens of LENGTHS) for (const form of ['ids', 'text'] as const) bodies.set(`${form}-${tokens}`, body(form, tokens));
  for (const mode of ['roundRobin', 'precise'] as const)
    for (const text of bodies.values()) await concurrent(sender(hosts[mode].url, text), WARM / bodies.size);
  const perRequest: Record<string, Record<Mode, number[]>> = {};
  const ratios: Record<string, number[]> = {};
  for (let round = 0; round < ROUNDS; round++) {
    for (const [key, text] of bodies) {
      const order: Mode[] = round % 2 === 0 ? ['roundRobin', 'precise'] : ['precise', 'roundRobin'];
      const used: Partial<Record<Mode, number>> = {};
      for (const mode of order) {
        const pid = hosts[mode].proc.pid;
        const before = cpuNs(pid);
        await concurrent(sender(hosts[mode].url, text), REQUESTS);
        used[mode] = (cpuNs(pid) - before) / REQUESTS / 1000;
        ((perRequest[key] ??= { roundRobin: [], precise: [] })[mode] as number[]).push(used[mode]);
      }
      (ratios[key] ??= []).push(used.precise! / used.roundRobin!);
      console.log(`round ${round} ${key}: round_robin ${used.roundRobin!.toFixed(1)} µs, precise ${used.precise!.toFixed(1)} µs`);
    }
  }
  const loadAfter = loadavg();
  const f = (x: number, d = 2) => x.toFixed(d);
  const rows = [...bodies.keys()].map((key) => {
    const [form, tokens] = key.split('-') as [Form, string];
    const r = spread(ratios[key]!);
    const rr = spread(perRequest[key]!.roundRobin);
    const pp = spread(perRequest[key]!.precise);
    return { key, form, tokens: Number(tokens), ratio: r, roundRobinUs: rr.median, preciseUs: pp.median };
  });
  const summary = [
    `CPU per proxied request, precise_prefix against round_robin (goal ≤ ${GOAL}×), ${ROUNDS} alternating rounds of ${REQUESTS} streamed PD requests at concurrency 32, Coordinators on CPU 1, engines on CPU 0; load average ${loadBefore.map((x) => x.toFixed(1)).join(' / ')} before, ${loadAfter.map((x) => x.toFixed(1)).join(' / ')} after.`,
    ...rows.map(
      (r) =>
        `${r.tokens} prompt tokens as ${r.form === 'ids' ? 'token ids' : 'text (tokenized by the precise Coordinator only)'}: ${f(r.preciseUs, 1)} µs against ${f(r.roundRobinUs, 1)} µs = ${f(r.ratio.median)}× (p10 ${f(r.ratio.p10)}×, p90 ${f(r.ratio.p90)}×): ${r.ratio.median <= GOAL ? 'met' : 'NOT MET'}.`,
    ),
  ].join('\n\n');
  console.log(summary);
  writeResults('proxy-cpu-kv', {
    summary,
    markdownTable: markdownTable(
      ['prompt', `${LABELS.roundRobin} µs / request`, `${LABELS.precise} µs / request`, 'ratio (p10 – p90)'],
      rows.map((r) => [
        `${r.tokens} tokens as ${r.form}`,
        f(r.roundRobinUs, 1),
        f(r.preciseUs, 1),
        `${f(r.ratio.median)}× (${f(r.ratio.p10)} – ${f(r.ratio.p90)})`,
      ]),
    ),
    json: {
      rounds: ROUNDS,
      requests: REQUESTS,
      goal: GOAL,
      blockSize: BLOCK_SIZE,
      load: { before: loadBefore, after: loadAfter },
      rows,
      perRequestUs: perRequest,
      ratios,
    },
  });
} finally {
  await Promise.all([hosts.roundRobin.proc.stop(), hosts.precise.proc.stop(), engines.stop()]);
  rmSync(dir, { recursive: true, force: true });
}
