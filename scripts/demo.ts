/**
 * `npm run demo`: a PD-disaggregated cluster of simulated engines on loopback, end to end.
 *
 * Starts a Coordinator and four `pdlink sim-engine` processes (two prefill, two decode, two
 * devices each, every engine on its own 127.x.y.z address), posts each engine its role the way a
 * Controller does, waits until every engine reports RoleReady (all links up), pushes the
 * Coordinator its refresh snapshot, then sends a few streaming requests through the Coordinator's
 * proxy and prints, per request, the (P, D) pair chosen, the KV bytes D pulled from P and verified,
 * and the latencies the client saw. Stops everything (SIGTERM, waiting for each exit) and exits 0.
 */
import { SimCluster, type SimEngineHandle } from '../src/sim/cluster.ts';

const REQUESTS = 6;
const MAX_TOKENS = 24;
const verbose = process.argv.includes('--verbose');

const log = (line = ''): void => console.log(line);

function clusterIds(engine: SimEngineHandle): string {
  return [...engine.process.output().matchAll(/^pdlink: link-(\d+) cluster_id (\d+)$/gm)].map((m) => `dev${m[1]}=${m[2]}`).join(' ');
}

async function main(): Promise<void> {
  log('pdlink demo: a coordinator and 4 simulated engines (2 prefill, 2 decode, 2 devices each) on loopback');
  const started = performance.now();
  const cluster = await SimCluster.start({
    prefill: 2,
    decode: 2,
    devices: 2,
    model: 'pdlink-sim',
    // Slow enough to see: 0.2 ms per prompt token, 4 ms per generated token.
    engine: { prefillMsPerToken: 0.2, decodeMsPerToken: 4, blockTokens: 16, blockBytes: 64 * 1024, numBlocks: 512 },
    ...(verbose ? { onLine: (line: string) => log(`  ${line}`) } : {}),
  });
  try {
    log(`cluster up in ${(performance.now() - started).toFixed(0)} ms: roles posted, every engine RoleReady, refresh pushed`);
    log(`  coordinator  management ${cluster.coordinatorUrl}  proxy ${cluster.proxyUrl}`);
    for (const e of cluster.engines) {
      log(`  ${e.name} (${e.role.padEnd(7)} id ${e.id})  inference ${e.inferenceUrl}  management ${e.manageUrl}  ${clusterIds(e)}`);
    }
    log();

    const rows: string[][] = [];
    const run = async (i: number): Promise<void> => {
      const id = `demo-${i}`;
      const prompt = `Request ${i}: ${'Explain how a decode instance pulls the KV cache of a prompt from a prefill instance. '.repeat(4 + i)}`;
      const sent = performance.now();
      const res = await fetch(`${cluster.proxyUrl}/v1/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-request-id': id },
        body: JSON.stringify({ model: 'pdlink-sim', prompt, max_tokens: MAX_TOKENS, stream: true }),
      });
      const reader = res.body!.getReader();
      let first: number | undefined;
      let text = '';
      const decoder = new TextDecoder();
      for (;;) {
        const { done, value } = await reader.read();
        if (done) break;
        first ??= performance.now();
        text += decoder.decode(value, { stream: true });
      }
      const total = performance.now() - sent;
      const tokens = text.split('\n\n').filter((e) => e.startsWith('data: {')).length;
      const legs = (
        await Promise.all(cluster.engines.map(async (e) => (await cluster.requests(e.name, id)).map((r) => ({ ...r, engine: e.name }))))
      ).flat() as Record<string, unknown>[];
      const p = legs.find((r) => r['leg'] === 'prefill');
      const d = legs.find((r) => r['leg'] === 'decode');
      rows.push([
        id,
        String(res.status),
        `${String(p?.['engine'] ?? '?')} → ${String(d?.['engine'] ?? '?')}`,
        String(d?.['blocks'] ?? 0),
        `${(Number(d?.['bytesPulled'] ?? 0) / 1024).toFixed(0)} KiB`,
        d?.['verified'] === true ? 'yes' : 'NO',
        `${Number(d?.['pullMs'] ?? 0).toFixed(1)}`,
        `${((first ?? sent) - sent).toFixed(1)}`,
        `${total.toFixed(1)}`,
        String(tokens),
      ]);
    };
    // Two at a time, so both pairs get work.
    for (let i = 0; i < REQUESTS; i += 2) await Promise.all([run(i), run(i + 1)]);

    const headers = ['request', 'status', 'P → D', 'blocks', 'KV pulled', 'verified', 'pull ms', 'first byte ms', 'total ms', 'events'];
    const widths = headers.map((h, c) => Math.max(h.length, ...rows.map((r) => r[c]!.length)));
    const line = (cells: string[]) => cells.map((cell, c) => cell.padEnd(widths[c]!)).join('  ');
    log(line(headers));
    log(widths.map((w) => '-'.repeat(w)).join('  '));
    for (const row of rows) log(line(row));
    log();

    for (const e of cluster.engines) {
      const s = await cluster.simStatus(e.name);
      const kv = s.kv;
      log(
        e.role === 'prefill'
          ? `  ${e.name}: ${s.requests['prefill']} prefills, KV blocks in use now ${kv['blocks_used']}/${kv['blocks_total']}`
          : `  ${e.name}: ${s.requests['decode']} decodes, ${kv['blocks_pulled']} blocks / ${(kv['bytes_pulled']! / 1024).toFixed(0)} KiB pulled and verified, ${kv['verify_failures']} verification failures`,
      );
    }
    const transfers = (await (await fetch(`${cluster.coordinatorUrl}/v1/transfers`)).json()) as {
      active: unknown[];
      totals: Record<string, unknown>;
    };
    log(`  coordinator ledger: ${transfers.active.length} active reservations, totals ${JSON.stringify(transfers.totals)}`);
  } finally {
    log();
    log('stopping (SIGTERM to every process, waiting for each exit)');
    await cluster.stop();
  }
  log('done');
}

await main();
process.exit(0);
