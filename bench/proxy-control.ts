/**
 * The proxy CPU benchmark's window into a proxy process it measures: a second listener on
 * loopback whose `POST /gc` runs a full collection, so that the heap allocated over a run of
 * requests can be read from JSC's GC log (BUN_JSC_logGC) between two known collections. It sits
 * idle while requests are measured, and does not keep the process alive: a proxy that closes on
 * SIGTERM (pdlink's Coordinator) exits when it has closed, not at its shutdown bound.
 */

/**
 * Starts the control listener and prints `pdlink: control listening on …`.
 * @example startControl();
 */
export function startControl(): void {
  const server = Bun.serve({
    hostname: '127.0.0.1',
    port: 0,
    fetch() {
      Bun.gc(true);
      return new Response('ok');
    },
  });
  server.unref();
  console.log(`pdlink: control listening on http://127.0.0.1:${server.port}`);
}
