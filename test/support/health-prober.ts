/**
 * A process of its own that asks `GET <url>` over and over and prints each answer's latency, so a
 * test can see how long a Coordinator takes to answer its health probe while it is under strain,
 * measured from outside the test's own (busy) event loop. Each line: `<epoch ms> <latency ms> <status>`.
 *
 * Run: bun test/support/health-prober.ts <url> [interval ms]
 */
export {};

const url = process.argv[2];
const interval = Number(process.argv[3] ?? 10);
if (url === undefined) {
  console.error('usage: bun test/support/health-prober.ts <url> [interval ms]');
  process.exit(2);
}
for (;;) {
  const started = performance.now();
  let status = 0;
  try {
    const res = await fetch(url, { signal: AbortSignal.timeout(30_000) });
    status = res.status;
    await res.arrayBuffer();
  } catch {
    status = -1;
  }
  console.log(`${Date.now()} ${(performance.now() - started).toFixed(2)} ${status}`);
  await Bun.sleep(interval);
}
