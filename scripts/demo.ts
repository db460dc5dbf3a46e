/**
 * `npm run demo`: a PD-disaggregated cluster of simulated engines on loopback, end to end.
 *
 * Starts a Coordinator, four `pdlink sim-engine` processes (two prefill, two decode, two devices
 * each, every engine on its own 127.x.y.z address) and `pdlink controller` on a topology file of
 * them. The controller posts each engine its role, waits until each reports RoleReady and keeps
 * the Coordinator's snapshot current. The demo sends a few streaming requests through the
 * Coordinator's proxy and prints, per request, the (P, D) pair chosen, the KV bytes D pulled from
 * P and verified, and the latencies the client saw. Then, under steady load, it scales out (a
 * fifth engine added through the controller's API) and kills -9 and restarts a decoder, printing
 * what the controller did and what the clients saw. Stops everything and exits 0.
 */
import { SimCluster, type SimEngineHandle } from '../src/sim/cluster/cluster.ts';
import { startSimController, type SimController } from '../src/sim/cluster/controller.ts';
import { until } from '../src/sim/cluster/process.ts';

/** Short enough to watch: a dead engine leaves within 1 s + one 0.5 s period. */
const TIMING = {
  cluster_synchronization_seconds: 0.5,
  role_retry_seconds: 1,
  instance_heartbeat_timeout_seconds: 1,
  status_poll_seconds: 0.1,
  drain_timeout_seconds: 10,
};

const REQUESTS = 6;
const MAX_TOKENS = 24;
const verbose = process.argv.includes('--verbose');

const log = (line = ''): void => console.log(line);

function clusterIds(engine: SimEngineHandle): string {
  return [...engine.process.output().matchAll(/^pdlink: link-(\d+) cluster_id (\d+)$/gm)].map((m) => `dev${m[1]}=${m[2]}`).join(' ');
}

async function held(cluster: SimCluster): Promise<number[]> {
  const view = (await (await fetch(`${cluster.coordinatorUrl}/v1/instances`, { headers: cluster.authorization() })).json()) as {
    instances: { id: number }[];
  };
  return view.instances.map((i) => i.id).sort((a, b) => a - b);
}

/** Waits until the Coordinator's ids satisfy `ok`; returns the ms it took. */
async function snapshotWhen(cluster: SimCluster, ok: (ids: number[]) => boolean, what: string): Promise<number> {
  const from = performance.now();
  let last: number[] = [];
  await until(
    async () => {
      last = await held(cluster);
      return ok(last) ? true : undefined;
    },
    60_000,
    () => `${what}: the Coordinator holds ${JSON.stringify(last)}`,
  );
  return performance.now() - from;
}

/** Clients sending short requests back to back; each outcome with its start time. */
function steadyLoad(cluster: SimCluster, clients: number): { stop(): Promise<{ at: number; status: number }[]> } {
  const outcomes: { at: number; status: number }[] = [];
  let running = true;
  let seq = 0;
  const client = async (): Promise<void> => {
    while (running) {
      const at = performance.now();
      const id = `demo-load-${++seq}`;
      let status = 0;
      try {
        const res = await fetch(`${cluster.proxyUrl}/v1/completions`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', 'x-request-id': id },
          body: JSON.stringify({ model: 'pdlink-sim', prompt: `steady load ${id} `.repeat(20), max_tokens: 8 }),
        });
        await res.arrayBuffer();
        status = res.status;
      } catch {
        // A refused connection counts as a failure (status 0).
      }
      outcomes.push({ at, status });
    }
  };
  const all = Array.from({ length: clients }, client);
  return {
    async stop() {
      running = false;
      await Promise.all(all);
      return outcomes;
    },
  };
}

async function controllerPhase(cluster: SimCluster, controller: SimController): Promise<void> {
  log('under steady load (4 clients):');
  const load = steadyLoad(cluster, 4);
  const d2 = await cluster.spawnEngine('decode');
  const added = await fetch(`${controller.url}/v1/cluster/instances`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...cluster.authorization() },
    body: JSON.stringify(cluster.topologyEntry(d2)),
  });
  const joinMs = await snapshotWhen(cluster, (ids) => ids.includes(d2.id), 'scale-out');
  log(`  scale-out: POST /v1/cluster/instances (d2, id ${d2.id}) answered ${added.status}; serving after ${joinMs.toFixed(0)} ms`);

  const d1 = cluster.engine('d1');
  const killedAt = performance.now();
  await d1.process.stop('SIGKILL');
  const leftMs = await snapshotWhen(cluster, (ids) => !ids.includes(d1.id), 'kill');
  const leftAt = killedAt + leftMs;
  log(`  kill -9 d1: out of the Coordinator's snapshot ${leftMs.toFixed(0)} ms later (heartbeat timeout 1 s + period)`);
  await cluster.restart('d1', { wire: false });
  const backMs = await snapshotWhen(cluster, (ids) => ids.includes(d1.id), 'restart');
  log(`  restart d1: answering, then back in the snapshot ${backMs.toFixed(0)} ms later (role posted at once, RoleReady)`);
  await until(
    async () => ((await cluster.simStatus('d2')).requests['decode']! > 0 ? true : undefined),
    20_000,
    () => 'd2 took no request',
  );

  const outcomes = await load.stop();
  const failed = outcomes.filter((o) => o.status !== 200);
  const after = failed.filter((o) => o.at >= leftAt);
  log(
    `  requests: ${outcomes.length} sent, ${outcomes.length - failed.length} succeeded, ${failed.length} failed ` +
      `(${after.length} started after d1 left the snapshot; the others were sent to d1 before the controller noticed)`,
  );
  const view = (await (await fetch(`${controller.url}/v1/cluster`, { headers: cluster.authorization() })).json()) as {
    instances: { id: number; role: string; state: string }[];
  };
  log(`  controller: ${view.instances.map((i) => `${i.id} ${i.role} ${i.state}`).join(', ')}`);
}

async function main(): Promise<void> {
  log('pdlink demo: a coordinator, a controller and 4 simulated engines (2 prefill, 2 decode, 2 devices each) on loopback');
  const started = performance.now();
  const cluster = await SimCluster.start({
    prefill: 2,
    decode: 2,
    devices: 2,
    model: 'pdlink-sim',
    // Slow enough to see: 0.2 ms per prompt token, 4 ms per generated token.
    engine: { prefillMsPerToken: 0.2, decodeMsPerToken: 4, blockTokens: 16, blockBytes: 64 * 1024, numBlocks: 512 },
    wire: false,
    ...(verbose ? { onLine: (line: string) => log(`  ${line}`) } : {}),
  });
  let controller: SimController | undefined;
  try {
    controller = await startSimController(cluster, cluster.engines, TIMING, verbose ? (line) => log(`  ${line}`) : undefined);
    const all = cluster.engines.map((e) => e.id).sort((a, b) => a - b);
    await snapshotWhen(cluster, (ids) => ids.join() === all.join(), 'start');
    log(
      `cluster up in ${(performance.now() - started).toFixed(0)} ms: the controller posted the roles, saw every engine RoleReady, pushed the snapshot`,
    );
    log(`  coordinator  management ${cluster.coordinatorUrl}  proxy ${cluster.proxyUrl}`);
    log(`  controller   management ${controller.url}  topology ${controller.topologyPath}`);
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
    const transfers = (await (await fetch(`${cluster.coordinatorUrl}/v1/transfers`, { headers: cluster.authorization() })).json()) as {
      active: unknown[];
      totals: Record<string, unknown>;
    };
    log(`  coordinator ledger: ${transfers.active.length} active reservations, totals ${JSON.stringify(transfers.totals)}`);
    log();
    await controllerPhase(cluster, controller);
  } finally {
    log();
    log('stopping (SIGTERM to every process, waiting for each exit)');
    await controller?.process.stop();
    await cluster.stop();
  }
  log('done');
}

await main();
process.exit(0);
