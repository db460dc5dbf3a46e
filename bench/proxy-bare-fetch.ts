/**
 * The floor of a two-leg proxy on Bun's `fetch`: the client's body to P (not streamed, one token),
 * P's kv_transfer_params to D, D's stream back; nothing else (no checks, no clocks, no metrics).
 *
 * With `--relay`, D's answer goes back through a ReadableStream of its own that reads D's body chunk
 * by chunk, as pdlink's relay must (to end a failed stream with an SSE error event and to settle the
 * request when the stream ends), instead of handing D's body to the response as it is. The
 * difference between the two is what relaying in JavaScript costs the runtime, before any of
 * pdlink's own work.
 *
 * Run: bun bench/proxy-bare-fetch.ts [--relay] <P url> <D url>
 */
import { startControl } from './proxy-control.ts';

const [p, d] = process.argv.slice(-2) as [string, string];
const relay = process.argv.includes('--relay');
const PREFILL_KV = { do_remote_decode: true, do_remote_prefill: false };

/** D's body read chunk by chunk into a stream of this proxy's own. */
function relayed(body: ReadableStream<Uint8Array>): ReadableStream<Uint8Array> {
  const reader = body.getReader();
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      const { done, value } = await reader.read();
      if (done) controller.close();
      else controller.enqueue(value);
    },
    cancel(reason) {
      return reader.cancel(reason);
    },
  });
}

const server = Bun.serve({
  hostname: '127.0.0.1',
  port: 0,
  async fetch(req) {
    const body = (await req.json()) as Record<string, unknown>;
    const headers = { 'content-type': 'application/json', 'x-request-id': req.headers.get('x-request-id') ?? '' };
    const pre = await fetch(`${p}/v1/completions`, {
      method: 'POST',
      headers,
      body: JSON.stringify({ ...body, stream: false, max_tokens: 1, kv_transfer_params: PREFILL_KV }),
    });
    const answer = (await pre.json()) as { kv_transfer_params?: unknown };
    const dec = await fetch(`${d}/v1/completions`, {
      method: 'POST',
      headers,
      body: JSON.stringify({ ...body, kv_transfer_params: answer.kv_transfer_params }),
    });
    return new Response(relay && dec.body !== null ? relayed(dec.body) : dec.body, {
      status: dec.status,
      headers: { 'content-type': dec.headers.get('content-type') ?? 'text/event-stream' },
    });
  },
});
startControl();
// A clean exit on SIGTERM, so that a profile asked for with --cpu-prof is written.
process.on('SIGTERM', () => process.exit(0));
console.log(`pdlink: proxy listening on http://127.0.0.1:${server.port}`);
