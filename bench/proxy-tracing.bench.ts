/**
 * Question: what does tracing cost the PD proxy per request? Off (the default), is it free, that is
 * as cheap as the same code before tracing existed? On, what does a request's spans and their
 * OTLP export add?
 *
 * Set-up: one prefill and one decode `pdlink sim-engine` (src/sim/cluster/cluster.ts) with zero simulated
 * compute, each in its own process; the proxy runs in this process, built three ways from
 * `proxyRoutes` with a fixed pair and a no-op ledger, so that what is measured is the proxy's own
 * work and nothing else of a Coordinator:
 *   - before: the proxy of the commit before tracing was added (`git archive` of its src/ into a
 *     scratch folder, imported from there; PROXY_TRACING_BASE names another commit);
 *   - off: today's proxy, tracing off;
 *   - on: today's proxy with OTLP tracing, exporting over HTTP/JSON to a receiver in a child
 *     process that drains each export; the queued spans are flushed before a round's CPU is read,
 *     so the round pays for its own export.
 * Each request is a streaming completion of a 64-token prompt and 16 tokens, read to its end, sent
 * one at a time through the app's fetch (no client socket). A fourth mode, floor, sends the same
 * two legs straight to the engines from this process: the client-side work every mode shares.
 * CPU per request = this process's user+system CPU (process.cpuUsage) around each request, summed
 * per mode over a round and divided by its requests; the proxy's own = mode minus floor, per round.
 * The modes take turns request by request in rotating order (ABCD, BCDA, ...), since the 2-core VM
 * is shared with other work; figures are medians over rounds with their p10–p90 spread, ratios
 * taken within a round.
 *
 * Run: `bun bench/proxy-tracing.bench.ts` (or `npm run bench -- proxy-tracing`); results in
 * bench/results/proxy-tracing.*.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { markdownTable, spread, times, writeResults } from './lib.ts';
import type { Instance } from '../src/cluster/instance.ts';
import { proxyRoutes, type ProxyDeps } from '../src/http/inference.ts';
import { createOtlpTracing } from '../src/proxy/telemetry/otlp-export.ts';
import type { PairPicker, ReservationLedger } from '../src/proxy/exchange/ports.ts';
import { SimCluster } from '../src/sim/cluster/cluster.ts';

const ROUNDS = Number(process.env['PROXY_TRACING_BENCH_ROUNDS'] ?? 24);
const PER_ROUND = Number(process.env['PROXY_TRACING_BENCH_REQUESTS'] ?? 200);
const MODEL = 'bench-sim';
const BODY = { model: MODEL, prompt: 'word '.repeat(51).trim(), max_tokens: 16, stream: true };
const BODY_TEXT = JSON.stringify(BODY);

type Mode = 'floor' | 'before' | 'off' | 'on';
type Send = (i: number) => Promise<void>;

async function drain(res: Response): Promise<void> {
  const text = await res.text();
  if (res.status !== 200 || !text.endsWith('data: [DONE]\n\n')) throw new Error(`bad answer ${res.status}: ${text.slice(0, 200)}`);
}

/** The commit before tracing: the parent of the commit that added src/proxy/trace.ts (now telemetry/trace.ts). */
function baseCommit(): string {
  const given = process.env['PROXY_TRACING_BASE'];
  if (given !== undefined) return given;
  const added = execFileSync('git', ['log', '--follow', '--diff-filter=A', '--format=%H', '--', 'src/proxy/telemetry/trace.ts'], {
    encoding: 'utf8',
  })
    .trim()
    .split('\n')
    .at(-1);
  if (added === undefined || added === '')
    throw new Error('cannot find the commit that added src/proxy/telemetry/trace.ts: set PROXY_TRACING_BASE');
  return execFileSync('git', ['rev-parse', '--short', `${added}^`], { encoding: 'utf8' }).trim();
}

/** A child process that accepts OTLP exports and drains them; its URL and a stop. */
async function startSink(): Promise<{ url: string; stop: () => void }> {
  const script =
    "const s = Bun.serve({ hostname: '127.0.0.1', port: 0, fetch: async (r) => { await r.arrayBuffer(); return Response.json({}); } }); console.log(s.port);";
  const child = Bun.spawn([process.execPath, '-e', script], { stdout: 'pipe', stderr: 'inherit' });
  const reader = child.stdout.getReader();
  let out = '';
  while (!out.includes('\n')) {
    const { value, done } = await reader.read();
    if (done) throw new Error('the OTLP sink exited before listening');
    out += new TextDecoder().decode(value);
  }
  return { url: `http://127.0.0.1:${out.trim()}`, stop: () => child.kill() };
}

// Spans wait in the queue until the round's end (no timed or size-triggered export in between), so
// their export is charged to the 'on' mode alone; read when the batch processor is built.
process.env['OTEL_BSP_SCHEDULE_DELAY'] = '3600000';
process.env['OTEL_BSP_MAX_QUEUE_SIZE'] = '1000000';
process.env['OTEL_BSP_MAX_EXPORT_BATCH_SIZE'] = '1000000';

const cluster = await SimCluster.start({
  prefill: 1,
  decode: 1,
  model: MODEL,
  engine: { prefillMsPerToken: 0, decodeMsPerToken: 0, blockTokens: 16, blockBytes: 4096 },
});
const root = join(import.meta.dir, '..');
const scratch = mkdtempSync(join(import.meta.dir, '.before-'));
const sink = await startSink();
try {
  const base = baseCommit();
  execFileSync('sh', ['-c', `git archive ${base} src | tar -x -C ${scratch}`], { cwd: root });
  const before = (await import(join(scratch, 'src/http/inference.ts'))) as { proxyRoutes: typeof proxyRoutes };

  const instanceOf = (url: string, id: number): Instance => {
    const u = new URL(url);
    return { id, ip: u.hostname, port: Number(u.port) } as unknown as Instance;
  };
  const p = instanceOf(cluster.engine('p0').inferenceUrl, cluster.engine('p0').id);
  const d = instanceOf(cluster.engine('d0').inferenceUrl, cluster.engine('d0').id);
  const picker: PairPicker = { pick: () => ({ ok: true, p, d }) };
  const ledger: ReservationLedger = {
    reserve: () => undefined,
    begin: () => undefined,
    complete: () => undefined,
    fail: () => undefined,
    release: () => undefined,
    extend: () => undefined,
    isActive: () => false,
  };
  const deps = (): ProxyDeps => ({ scheduler: picker, ledger });
  const otlp = createOtlpTracing({ endpoint: sink.url, serviceName: 'pdlink-bench' });
  const apps = {
    before: before.proxyRoutes(deps()),
    off: proxyRoutes(deps()),
    on: proxyRoutes({ ...deps(), tracing: otlp.tracing }),
  };
  const viaProxy =
    (app: { fetch: (r: Request) => Response | Promise<Response> }): Send =>
    async (i) =>
      drain(
        await app.fetch(
          new Request('http://127.0.0.1/v1/completions', {
            method: 'POST',
            headers: { 'content-type': 'application/json', 'x-request-id': `bench-${i}` },
            body: BODY_TEXT,
          }),
        ),
      );
  const post = (url: string, body: unknown, id: string): Promise<Response> =>
    fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', 'x-request-id': id }, body: JSON.stringify(body) });
  const floor: Send = async (i) => {
    const id = `floor-${i}`;
    const pre = await post(
      `${cluster.engine('p0').inferenceUrl}/v1/completions`,
      { ...BODY, stream: false, max_tokens: 1, kv_transfer_params: { do_remote_decode: true, do_remote_prefill: false } },
      id,
    );
    const answer = (await pre.json()) as { kv_transfer_params?: unknown };
    await drain(
      await post(`${cluster.engine('d0').inferenceUrl}/v1/completions`, { ...BODY, kv_transfer_params: answer.kv_transfer_params }, id),
    );
  };
  const senders: Record<Mode, Send> = { floor, before: viaProxy(apps.before), off: viaProxy(apps.off), on: viaProxy(apps.on) };

  let seq = 0;
  const cpuNow = (): number => {
    const used = process.cpuUsage();
    return used.user + used.system;
  };
  /**
   * CPU microseconds per request of each mode over one round: `n` steps, each sending one request
   * of every mode in a rotating order, so that whatever else loads the machine meanwhile falls on
   * all modes alike. The queued spans are exported at the round's end, charged to 'on'.
   */
  const round = async (n: number): Promise<Record<Mode, number>> => {
    const used: Record<Mode, number> = { floor: 0, before: 0, off: 0, on: 0 };
    for (let i = 0; i < n; i++) {
      for (let k = 0; k < modes.length; k++) {
        const mode = modes[(i + k) % modes.length]!;
        const start = cpuNow();
        await senders[mode](seq++);
        used[mode] += cpuNow() - start;
      }
    }
    const start = cpuNow();
    await otlp.flush();
    used.on += cpuNow() - start;
    return { floor: used.floor / n, before: used.before / n, off: used.off / n, on: used.on / n };
  };

  const modes: Mode[] = ['floor', 'before', 'off', 'on'];
  await round(100);
  const cpu: Record<Mode, number[]> = { floor: [], before: [], off: [], on: [] };
  for (let r = 0; r < ROUNDS; r++) {
    const got = await round(PER_ROUND);
    for (const mode of modes) cpu[mode].push(got[mode]);
  }
  const own = (mode: Mode): number[] => cpu[mode].map((v, i) => v - cpu.floor[i]!);
  const per = (xs: number[], ys: number[]): number[] => xs.map((v, i) => v / ys[i]!);
  const med = (xs: number[]): number => spread(xs).median;
  const band = (xs: number[], digits = 0): string => `${spread(xs).p10.toFixed(digits)}–${spread(xs).p90.toFixed(digits)}`;
  const versus = (xs: number[]): string => `${times(med(xs))} (${band(xs, 2)})`;
  const rows = (['before', 'off', 'on'] as const).map((mode) => [
    mode === 'before' ? `before tracing (${base})` : `tracing ${mode}`,
    `${med(cpu[mode]).toFixed(0)} (${band(cpu[mode])})`,
    `${med(own(mode)).toFixed(0)} (${band(own(mode))})`,
    mode === 'before' ? '—' : versus(per(cpu[mode], cpu.before)),
    mode === 'on' ? versus(per(cpu.on, cpu.off)) : '—',
  ]);
  rows.unshift(['floor (the two legs sent directly)', `${med(cpu.floor).toFixed(0)} (${band(cpu.floor)})`, '—', '—', '—']);
  const table = markdownTable(
    [
      'mode',
      'process CPU per request, µs (p10–p90)',
      'proxy CPU per request (minus floor), µs (p10–p90)',
      'process CPU vs before, per round',
      'process CPU vs off, per round',
    ],
    rows,
  );
  const offVsBefore = per(cpu.off, cpu.before);
  const onVsOff = per(cpu.on, cpu.off);
  const summary =
    `Proxy CPU per request (floor subtracted): before tracing ${med(own('before')).toFixed(0)} µs, tracing off ${med(own('off')).toFixed(0)} µs, ` +
    `tracing on ${med(own('on')).toFixed(0)} µs. Process CPU per round: off ${times(med(offVsBefore))} of before (p10–p90 ${band(offVsBefore, 2)}), ` +
    `on ${times(med(onVsOff))} of off (${band(onVsOff, 2)}, +${(med(cpu.on) - med(cpu.off)).toFixed(0)} µs a request). ` +
    `${ROUNDS} rounds × ${PER_ROUND} sequential streaming requests in rotating order, medians over rounds, on a 2-core VM shared with other work.`;
  writeResults('proxy-tracing', {
    json: {
      rounds: ROUNDS,
      perRound: PER_ROUND,
      base,
      cpuUsPerRequest: cpu,
      onVsOffRatios: onVsOff,
      offVsBeforeRatios: offVsBefore,
    },
    markdownTable: table,
    summary,
  });
  console.log(table);
  console.log(summary);
  await otlp.shutdown();
} finally {
  sink.stop();
  rmSync(scratch, { recursive: true, force: true });
  await cluster.stop();
}
