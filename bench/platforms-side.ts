/**
 * One platform's side of bench/platforms.bench.ts: the same pdlink code on Bun or Deno (a LinkManager
 * over the worker pool, a direct context, a Coordinator's management and inference apps served by
 * the platform seam), driven by JSON lines on stdin and answering on stdout, one command at a time.
 *
 * Started by the bench: `bun bench/platforms-side.ts TARGETS SNAPSHOT` or
 * `npx deno run -A bench/platforms-side.ts TARGETS SNAPSHOT`.
 */
import { createInterface } from 'node:readline';
import { createCoordinator } from '../src/apps/coordinator.ts';
import { LLM_STATUS } from '../src/core/llm-status.ts';
import * as ffi from '../src/ffi/index.ts';
import { LinkManager } from '../src/links/manager.ts';
import type { EndpointTarget } from '../src/links/types.ts';
import { platform } from '../src/platform/index.ts';
import { parseRefresh } from '../src/schema/refresh.ts';
import { PoolLinkExecutor } from '../src/workers/pool-executor.ts';
import { DEFAULT_POOL_THREADS, WorkerPool } from '../src/workers/pool.ts';
import { percentile } from './lib.ts';

/** Where the bench's prefill contexts listen, and the address the side links from. */
export const P_IP = '127.0.0.2';
export const D_IP = '127.0.0.3';

interface SideCommand {
  readonly op: string;
  readonly [key: string]: unknown;
}

async function side(): Promise<void> {
  const [targetsJson, engineSnapshot] = process.argv.slice(-2) as [string, string];
  const targets = (JSON.parse(targetsJson) as { id: string; port: number }[]).map((t): EndpointTarget => ({
    remoteClusterId: BigInt(t.id),
    remote: { ip: P_IP, port: t.port },
    local: { ip: D_IP, port: 0 },
  }));
  const specs: ffi.ClusterSpec[] = targets.map((t) => ({
    remoteClusterId: t.remoteClusterId,
    remoteIp: t.remote.ip,
    remotePort: t.remote.port,
    localIp: D_IP,
  }));
  const idBase = BigInt(Date.now()) * 1000n + BigInt(process.pid % 1000);
  const direct = ffi.create({ clusterId: idBase, role: 'decoder' });
  const pool = new WorkerPool({ threads: DEFAULT_POOL_THREADS });
  const created = await pool.run<number>({ op: 'create', clusterId: idBase + 1n, role: 'decoder', listenIp: null, listenPort: 0 });
  if (!created.ok) throw new Error(created.message);
  const executor = new PoolLinkExecutor({ pool, handles: new Map([['0', created.value]]) });
  const manager = new LinkManager({ executor, endpoints: ['0'], maxBatch: 16, batchWindowMs: 1, parallelCalls: DEFAULT_POOL_THREADS });

  const refresh = createCoordinator({ bodyLimitBytes: 8 * 1024 * 1024 });
  const proxy = createCoordinator();
  proxy.registry.apply(parseRefresh(JSON.parse(engineSnapshot)));
  const serve = (fetch: (request: Request, env: never) => Response | Promise<Response>) =>
    platform.serve({ hostname: '127.0.0.1', port: 0, fetch: (request, env) => fetch(request, env as never), idleTimeoutSeconds: 60 });
  const management = serve(refresh.managementFetch);
  const inference = serve(proxy.inferenceFetch);

  const ok = (rets: readonly number[]): void => {
    if (rets.some((c) => c !== LLM_STATUS.LLM_SUCCESS)) throw new Error(`link call failed: ${rets.join(', ')}`);
  };
  const run = async (c: SideCommand): Promise<unknown> => {
    switch (c.op) {
      case 'ffiCalls': {
        const end = performance.now() + (c['ms'] as number);
        let calls = 0;
        while (performance.now() < end) {
          for (let i = 0; i < 1000; i++) ffi.listenPort(direct);
          calls += 1000;
        }
        return (calls * 1000) / (c['ms'] as number);
      }
      case 'directLone': {
        const us: number[] = [];
        for (let i = 0; i < (c['pairs'] as number); i++) {
          const spec = specs[i % specs.length]!;
          const start = performance.now();
          ok(ffi.link(direct, [spec], 3000).rets);
          ok(ffi.unlink(direct, [spec], 3000).rets);
          us.push((performance.now() - start) * 1000);
        }
        return percentile(us, 50);
      }
      case 'directBatched': {
        const calls = Math.ceil((c['pairs'] as number) / specs.length);
        const start = performance.now();
        for (let i = 0; i < calls; i++) {
          ok(ffi.link(direct, specs, 3000).rets);
          ok(ffi.unlink(direct, specs, 3000).rets);
        }
        return (calls * specs.length) / ((performance.now() - start) / 1000);
      }
      case 'managerLone': {
        const us: number[] = [];
        for (let i = 0; i < (c['pairs'] as number); i++) {
          const t = targets[i % targets.length]!;
          const start = performance.now();
          ok((await manager.linkClusters([t])).rets);
          ok((await manager.unlinkClusters([t])).rets);
          us.push((performance.now() - start) * 1000);
        }
        return percentile(us, 50);
      }
      case 'managerStorm': {
        const cycles = Math.ceil((c['pairs'] as number) / targets.length);
        const start = performance.now();
        for (let i = 0; i < cycles; i++) {
          for (const r of await Promise.all(targets.map((t) => manager.linkClusters([t])))) ok(r.rets);
          for (const r of await Promise.all(targets.map((t) => manager.unlinkClusters([t])))) ok(r.rets);
        }
        return (cycles * targets.length) / ((performance.now() - start) / 1000);
      }
      case 'cpu': {
        const { user, system } = process.cpuUsage();
        return user + system;
      }
      case 'exit':
        await manager.idle();
        await pool.run({ op: 'destroy', handle: created.value });
        ffi.destroy(direct);
        await Promise.all([pool.close(), management.stop(), inference.stop(), refresh.close(), proxy.close()]);
        setTimeout(() => process.exit(0), 0);
        return null;
      default:
        throw new Error(`unknown op ${c.op}`);
    }
  };

  const version = process.versions['deno'] ?? process.versions['bun'] ?? 'unknown';
  console.log(JSON.stringify({ ready: true, platform: platform.name, version, management: management.port, inference: inference.port }));
  // One command at a time: the parent waits for each answer, so measurements never overlap.
  for await (const line of createInterface({ input: process.stdin })) {
    const c = JSON.parse(line) as SideCommand;
    try {
      console.log(JSON.stringify({ ok: true, value: await run(c) }));
    } catch (error) {
      console.log(JSON.stringify({ ok: false, message: String(error) }));
    }
  }
}

if (import.meta.main) await side();
