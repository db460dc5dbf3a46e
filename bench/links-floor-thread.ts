/**
 * Worker of bench/links-floor.bench.ts: runs lone link+unlink pairs back to back on a thread of
 * its own, over bun:ffi on a context of its own, and answers the median µs of a pair. Set beside
 * the direct pairs on the main thread, it tells whether a runtime call itself is slower off the
 * main thread, or only the hops to and from a thread that sleeps between calls cost more.
 */
import { parentPort } from 'node:worker_threads';
import { LLM_STATUS } from '../src/core/llm-status.ts';
import type { ClusterSpec } from '../src/ffi/layout.ts';
import { create, destroy, link, unlink } from '../src/ffi/runtime.ts';
import { percentile } from './lib.ts';

/** What the bench sends: the clusters to link and how many pairs; `null` ends the thread's context. */
export type ThreadRequest = { readonly specs: readonly ClusterSpec[]; readonly pairs: number } | null;

const port = parentPort!;
const context = create({ clusterId: BigInt(Date.now()) * 1000n + 11n, role: 'decoder' });

const ok = (rets: readonly number[]) => {
  if (rets.some((c) => c !== LLM_STATUS.LLM_SUCCESS)) throw new Error(`call failed: ${rets}`);
};

port.on('message', (request: ThreadRequest) => {
  if (request === null) {
    destroy(context);
    port.close();
    return;
  }
  const us: number[] = [];
  for (let i = 0; i < request.pairs; i++) {
    const spec = request.specs[i % request.specs.length]!;
    const start = performance.now();
    ok(link(context, [spec], 3000).rets);
    ok(unlink(context, [spec], 3000).rets);
    us.push((performance.now() - start) * 1000);
  }
  port.postMessage(percentile(us, 50));
});
port.postMessage('ready');
