/**
 * Questions about `POST /v1/instances/refresh`, each answered as a ratio measured in one run:
 * (a) Throughput end to end through a real socket (body read, parse, validation, registry,
 *     scheduler and ledger): pdlink's management app under Bun.serve vs a raw Bun.serve that parses
 *     the same JSON and answers 200, for 2 and 4096 instances, each with the same snapshot resent
 *     and with every instance changed from one request to the next. Goals: 2 instances ≥ 0.9×;
 *     4096 instances all changed ≤ 1.5× a raw parse's time (≥ 0.67× its throughput).
 * (b) Server-side apply time (validate + apply, in-process) for 16, 256 and 4096 instances vs
 *     JSON.parse of the same body. Goal: ≤ 2×. Reported alongside, for the record: readJsonBody's
 *     exact-integer parse vs JSON.parse, and Valibot alone (the path of a rejected body).
 *
 * Run: node_modules/.bin/bun bench/refresh.bench.ts   (add --quick for a short check that writes nothing)
 * The servers of (a) run in a child process so the load generator does not share their thread.
 */
import type { Socket } from 'bun';
import * as v from 'valibot';
import { ClusterRegistry } from '../src/cluster/registry.ts';
import { createCoordinator } from '../src/apps/coordinator.ts';
import { parseJsonExact } from '../src/core/exact-json.ts';
import { exampleSnapshot, SEED_REFRESH_BODY } from '../test/doubles/refresh-examples.ts';
import { RefreshSchema, validateRefresh } from '../src/schema/refresh.ts';
import { alternate, markdownTable, msPerCall, spread, times, writeResults } from './lib.ts';

/** `--quick`: a few short rounds to check the benchmark itself works; nothing is written. */
const QUICK = process.argv.includes('--quick');
// Many short rounds: on a shared machine, adjacent short measurements share the same load, so
// their ratio is steadier than that of long rounds far apart.
const HTTP_ROUNDS = QUICK ? 2 : Number(process.env.REFRESH_HTTP_ROUNDS ?? 16);
const HTTP_ROUND_MS = QUICK ? 200 : 500;
const HTTP_CONNECTIONS = 8;
const APPLY_ROUNDS = QUICK ? 2 : 10;
const APPLY_ROUND_MS = QUICK ? 30 : 250;
const SIZES = [16, 256, 4096];

/** Child process: both servers on ephemeral loopback ports; exits when the parent closes stdin. */
async function serve(): Promise<void> {
  const coordinator = createCoordinator({ bodyLimitBytes: 8 * 1024 * 1024 });
  const pdlink = Bun.serve({ hostname: '127.0.0.1', port: 0, fetch: coordinator.managementApp.fetch });
  const raw = Bun.serve({
    hostname: '127.0.0.1',
    port: 0,
    async fetch(request) {
      JSON.parse(await request.text());
      return new Response(null, { status: 200 });
    },
  });
  console.log(JSON.stringify({ pdlink: pdlink.port, raw: raw.port }));
  for await (const _ of Bun.stdin.stream());
  process.exit(0);
}

async function main(): Promise<void> {
  const http = await benchHttp();
  const apply = await benchApply();

  const applyOk = apply.every((r) => r.ratio.median <= 2);
  const two = http.filter((h) => h.size === 2);
  const bigChanged = http.find((h) => h.size === 4096 && h.changed)!;
  const summary = [
    `(a) refresh over HTTP end to end, pdlink / raw Bun.serve parsing the same JSON (throughput): ` +
      http.map((h) => `${h.name} ${times(h.ratio.median)} (p10 ${times(h.ratio.p10)}, p90 ${times(h.ratio.p90)})`).join('; ') +
      `; ${HTTP_ROUNDS} alternating rounds of ${HTTP_ROUND_MS} ms, ${HTTP_CONNECTIONS} connections. ` +
      `Goals: 2 instances ≥ 0.9×: ${two.every((h) => h.ratio.median >= 0.9) ? 'met' : 'NOT met'}; ` +
      `4096 all changed ≤ 1.5× a raw parse's time: ${times(1 / bigChanged.ratio.median)}, ${1 / bigChanged.ratio.median <= 1.5 ? 'met' : 'NOT met'}.`,
    `(b) validate + apply / JSON.parse: ${apply.map((r) => `${r.size} → ${times(r.ratio.median)}`).join(', ')}; goal ≤ 2×: ${applyOk ? 'met' : 'NOT met'}.`,
    `The machine is a 2-core VM shared with other test runs while this ran.`,
  ].join('\n');
  const rows: (string | number)[][] = http.map((h) => [
    `(a) HTTP, ${h.name}`,
    'req/s',
    fmt(spread(h.baseline).median, h.size > 16 ? 1 : 0),
    fmt(spread(h.subject).median, h.size > 16 ? 1 : 0),
    times(h.ratio.median),
    `${times(h.ratio.p10)}–${times(h.ratio.p90)}`,
  ]);
  for (const r of apply) {
    rows.push([
      `(b) validate + apply, ${r.size}`,
      'ms/op',
      fmt(r.parseMs, 4),
      fmt(r.applyMs, 4),
      times(r.ratio.median),
      `${times(r.ratio.p10)}–${times(r.ratio.p90)}`,
    ]);
    rows.push([
      `    readJsonBody parse, ${r.size}`,
      'ms/op',
      fmt(r.exactBaselineMs, 4),
      fmt(r.exactMs, 4),
      times(r.exactRatio.median),
      `${times(r.exactRatio.p10)}–${times(r.exactRatio.p90)}`,
    ]);
    rows.push([
      `    Valibot alone, ${r.size}`,
      'ms/op',
      fmt(r.valibotBaselineMs, 4),
      fmt(r.valibotMs, 4),
      times(r.valibotRatio.median),
      `${times(r.valibotRatio.p10)}–${times(r.valibotRatio.p90)}`,
    ]);
  }
  const table = markdownTable(['measurement', 'unit', 'baseline (median)', 'subject (median)', 'ratio (median)', 'ratio p10–p90'], rows);
  console.log(`${summary}\n\n${table}`);
  if (QUICK) return;
  writeResults('refresh', {
    summary,
    markdownTable: table,
    json: {
      http: { rounds: HTTP_ROUNDS, roundMs: HTTP_ROUND_MS, connections: HTTP_CONNECTIONS, cases: http },
      apply: { rounds: APPLY_ROUNDS, roundMs: APPLY_ROUND_MS, sizes: apply },
    },
  });
}

const fmt = (x: number, digits = 0) => x.toFixed(digits);

// ---- (a) HTTP throughput --------------------------------------------------------------------

/** The HTTP cases: a snapshot resent as it is, or two snapshots differing in every instance, alternated. */
const HTTP_CASES = [
  { name: '2 instances, same', size: 2, changed: false },
  { name: '2 instances, all changed', size: 2, changed: true },
  { name: '4096 instances, same', size: 4096, changed: false },
  { name: '4096 instances, all changed', size: 4096, changed: true },
] as const;

function caseBodies(size: number, changed: boolean): string[] {
  if (size === 2) {
    const other = JSON.parse(SEED_REFRESH_BODY);
    for (const instance of other.instances) instance.dynamic_info.avail_slots_num -= 1;
    return changed ? [SEED_REFRESH_BODY, JSON.stringify(other)] : [SEED_REFRESH_BODY];
  }
  const first = JSON.stringify(exampleSnapshot(size));
  return changed ? [first, JSON.stringify(exampleSnapshot(size, { load: 1 }))] : [first];
}

async function benchHttp() {
  const child = Bun.spawn([process.execPath, import.meta.path, 'serve'], { stdin: 'pipe', stdout: 'pipe', stderr: 'inherit' });
  try {
    const ports = JSON.parse(await firstLine(child.stdout)) as { pdlink: number; raw: number };
    const request = (port: number, body: string) =>
      new TextEncoder().encode(
        `POST /v1/instances/refresh HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nContent-Type: application/json\r\n` +
          `Content-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
      );
    const results = [];
    for (const c of HTTP_CASES) {
      const bodies = caseBodies(c.size, c.changed);
      const raw = bodies.map((b) => request(ports.raw, b));
      const pdlink = bodies.map((b) => request(ports.pdlink, b));
      await load(ports.raw, raw, 300); // warm-up of both servers and of the client
      await load(ports.pdlink, pdlink, 300);
      const r = await alternate(
        HTTP_ROUNDS,
        () => load(ports.raw, raw, HTTP_ROUND_MS),
        () => load(ports.pdlink, pdlink, HTTP_ROUND_MS),
      );
      const ratio = spread(r.ratios);
      console.log(`${c.name}: ${times(ratio.median)} (p10 ${times(ratio.p10)}, p90 ${times(ratio.p90)})`);
      results.push({ ...c, bodyBytes: Buffer.byteLength(bodies[0]!), baseline: r.baseline, subject: r.subject, ratios: r.ratios, ratio });
    }
    return results;
  } finally {
    child.stdin.end();
    await child.exited;
  }
}

async function firstLine(stream: ReadableStream<Uint8Array>): Promise<string> {
  const decoder = new TextDecoder();
  let text = '';
  for await (const chunk of stream) {
    text += decoder.decode(chunk);
    const end = text.indexOf('\n');
    if (end >= 0) return text.slice(0, end);
  }
  throw new Error('the server process exited before printing its ports');
}

/**
 * Requests per second over `durationMs` from HTTP_CONNECTIONS keep-alive connections, each sending
 * the next request as soon as the previous answer is complete. A raw socket client: far lighter
 * than fetch, so the figure is the server's rather than the client's. Any non-200 fails the run.
 */
async function load(port: number, requests: readonly Uint8Array[], durationMs: number): Promise<number> {
  const deadline = performance.now() + durationMs;
  let completed = 0;
  // Requests go out in turn across all connections, so with two bodies each refresh differs from the last.
  let next = 0;
  const request = () => requests[next++ % requests.length]!;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: HTTP_CONNECTIONS }, async () => {
      const { promise, resolve, reject } = Promise.withResolvers<void>();
      let pending = '';
      await Bun.connect({
        hostname: '127.0.0.1',
        port,
        socket: {
          open(socket) {
            socket.write(request());
          },
          data(socket: Socket, chunk: Buffer) {
            pending += chunk.toString('latin1');
            for (;;) {
              const headerEnd = pending.indexOf('\r\n\r\n');
              if (headerEnd < 0) return;
              const head = pending.slice(0, headerEnd);
              const status = head.slice(9, 12);
              const length = Number(/\r\ncontent-length: *(\d+)/i.exec(head)?.[1] ?? 0);
              if (pending.length < headerEnd + 4 + length) return;
              if (status !== '200')
                return reject(new Error(`port ${port} answered ${head.split('\r\n')[0]}: ${pending.slice(headerEnd + 4)}`));
              pending = pending.slice(headerEnd + 4 + length);
              completed++;
              if (performance.now() >= deadline) {
                socket.end();
                return resolve();
              }
              socket.write(request());
            }
          },
          error: (_socket, error) => reject(error),
          close: () => resolve(),
        },
      });
      await promise;
    }),
  );
  return completed / ((performance.now() - started) / 1000);
}

// ---- (b) in-process apply time --------------------------------------------------------------

async function benchApply() {
  const results = [];
  for (const size of SIZES) {
    // Two successive snapshots differing in every instance's free slots: each apply updates all.
    const texts = [JSON.stringify(exampleSnapshot(size)), JSON.stringify(exampleSnapshot(size, { load: 1 }))];
    // Parsed as the route parses them: the registry skips measuring the depth of bodies its parser measured.
    const parsed = texts.map((t) => parseJsonExact(t));
    const registry = new ClusterRegistry();
    let turn = 0;
    const parse = () => msPerCall(() => JSON.parse(texts[turn++ & 1]!), APPLY_ROUND_MS);
    const apply = () =>
      msPerCall(() => {
        const result = validateRefresh(parsed[turn++ & 1]);
        if (!result.ok) throw new Error(`benchmark snapshot rejected: ${result.issues[0]?.message}`);
        registry.apply(result.snapshot);
      }, APPLY_ROUND_MS);
    const exact = () => msPerCall(() => parseJsonExact(texts[turn++ & 1]!), APPLY_ROUND_MS);
    const valibot = () => msPerCall(() => v.safeParse(RefreshSchema, parsed[turn++ & 1], { abortEarly: false }), APPLY_ROUND_MS);
    const main = await alternate(APPLY_ROUNDS, parse, apply);
    const exactRun = await alternate(APPLY_ROUNDS, parse, exact);
    const valibotRun = await alternate(APPLY_ROUNDS, parse, valibot);
    const median = (xs: number[]) => spread(xs).median;
    results.push({
      size,
      bodyBytes: Buffer.byteLength(texts[0]!),
      parseMs: median(main.baseline),
      applyMs: median(main.subject),
      ratio: spread(main.ratios),
      ratios: main.ratios,
      exactBaselineMs: median(exactRun.baseline),
      exactMs: median(exactRun.subject),
      exactRatio: spread(exactRun.ratios),
      valibotBaselineMs: median(valibotRun.baseline),
      valibotMs: median(valibotRun.subject),
      valibotRatio: spread(valibotRun.ratios),
    });
  }
  return results;
}

// Last, so every constant above is initialised when it runs.
if (process.argv[2] === 'serve') await serve();
else await main();
