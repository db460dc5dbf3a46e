/**
 * Question: how much memory does the Coordinator hold after a 4096-instance refresh and 100k
 * proxied requests, and does it stay flat over the next 100k? Goal: ≤ 100 MiB, flat.
 *
 * Set-up: the proxy benchmark's simulated cluster (one prefill, one decode `pdlink sim-engine`, zero
 * compute time, 4 blocks of 4 KiB moved per request), whose refresh also lists 4094 instances that
 * are never picked (prefills no decode names, decodes that name no prefill), so the registry,
 * scheduler and ledger hold 4096. Requests: streaming completions at concurrency 32. RSS is the
 * Coordinator process's VmRSS (/proc), read after each phase; BENCH_RSS_REQUESTS sets the phase
 * length (100,000 by default).
 *
 * Run: bun bench/rss.bench.ts   → bench/results/rss.{json,md}
 */
import { readFileSync } from 'node:fs';
import { refreshBody } from '../src/sim/cluster-bodies.ts';
import { SimCluster } from '../src/sim/cluster.ts';
import { markdownTable, writeResults } from './lib.ts';

const PHASE = Number(process.env['BENCH_RSS_REQUESTS'] ?? 100_000);
const CONCURRENCY = 32;
const INSTANCES = 4096;
const MODEL = 'bench-sim';
const BODY = JSON.stringify({ model: MODEL, prompt: 'word '.repeat(51).trim(), max_tokens: 16, stream: true });

function rssMiB(pid: number): number {
  const kb = Number(/VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1]);
  return kb / 1024;
}

async function phase(url: string, n: number): Promise<number> {
  let next = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (next < n) {
        const id = next++;
        const res = await fetch(`${url}/v1/completions`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', 'x-request-id': `rss-${id}` },
          body: BODY,
        });
        const text = await res.text();
        if (res.status !== 200 || !text.endsWith('data: [DONE]\n\n')) throw new Error(`bad answer ${res.status}: ${text.slice(0, 200)}`);
      }
    }),
  );
  return n / ((performance.now() - started) / 1000);
}

const cluster = await SimCluster.start({
  prefill: 1,
  decode: 1,
  model: MODEL,
  engine: { prefillMsPerToken: 0, decodeMsPerToken: 0, numBlocks: 4096, blockBytes: 4096, blockTokens: 16 },
});
try {
  const pid = cluster.coordinator.child.pid!;
  const entries = cluster.engines.map((e) => ({
    engine: e,
    inferencePort: Number(new URL(e.inferenceUrl).port),
    managementPort: Number(new URL(e.manageUrl).port),
  }));
  const body = refreshBody(entries, MODEL, cluster.settings) as { ids: number[]; instances: Record<string, any>[] };
  const template = body.instances[0]!;
  for (let k = 0; body.instances.length < INSTANCES; k++) {
    const id = 100_000 + k;
    const prefill = k % 2 === 0;
    body.ids.push(id);
    body.instances.push({
      ...template,
      id,
      ip: `10.9.${(k >> 8) & 255}.${k & 255}`,
      static_info: { ...template.static_info, group_id: 1000 + (k >> 4), role: prefill ? 80 : 68 },
      dynamic_info: { ...template.dynamic_info, ...(prefill ? { peers: undefined } : { peers: [] }) },
    });
  }
  const res = await fetch(`${cluster.coordinatorUrl}/v1/instances/refresh`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  if (res.status !== 200) throw new Error(`refresh answered ${res.status}: ${await res.text()}`);
  const afterRefresh = rssMiB(pid);
  const rate1 = await phase(cluster.proxyUrl, PHASE);
  const afterFirst = rssMiB(pid);
  const rate2 = await phase(cluster.proxyUrl, PHASE);
  const afterSecond = rssMiB(pid);
  const growth = afterSecond - afterFirst;
  console.log(
    `RSS ${afterRefresh.toFixed(1)} → ${afterFirst.toFixed(1)} → ${afterSecond.toFixed(1)} MiB (${rate1.toFixed(0)}, ${rate2.toFixed(0)} req/s)`,
  );
  const summary =
    `Coordinator RSS after a ${INSTANCES}-instance refresh: ${afterRefresh.toFixed(1)} MiB; after ${PHASE.toLocaleString('en')} proxied requests: ${afterFirst.toFixed(1)} MiB ` +
    `(goal ≤ 100 MiB: ${afterFirst <= 100 ? 'met' : 'not met'}); after ${PHASE.toLocaleString('en')} more: ${afterSecond.toFixed(1)} MiB (${growth >= 0 ? '+' : ''}${growth.toFixed(1)} MiB). ` +
    `Streaming completions at concurrency ${CONCURRENCY}, ${rate1.toFixed(0)} and ${rate2.toFixed(0)} req/s; one run on a 2-core VM shared with other test runs.`;
  writeResults('rss', {
    json: {
      question: 'Coordinator RSS after 4096 instances and N requests, and over N more',
      instances: INSTANCES,
      requestsPerPhase: PHASE,
      concurrency: CONCURRENCY,
      rssMiB: { afterRefresh, afterFirst, afterSecond },
      reqPerS: [rate1, rate2],
    },
    markdownTable: markdownTable(
      ['point', 'Coordinator RSS, MiB'],
      [
        [`after the ${INSTANCES}-instance refresh`, afterRefresh.toFixed(1)],
        [`after ${PHASE.toLocaleString('en')} requests`, afterFirst.toFixed(1)],
        [`after ${PHASE.toLocaleString('en')} more`, afterSecond.toFixed(1)],
      ],
    ),
    summary,
  });
} finally {
  await cluster.stop();
}
