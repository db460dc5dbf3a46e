/**
 * The floor of a two-leg proxy on Bun's `fetch`: the client's body to P (not streamed, one token),
 * P's kv_transfer_params to D, D's stream back; nothing else (no checks, no clocks, no metrics).
 *
 * Run: bun bench/proxy-bare-fetch.ts <P url> <D url>
 */
import { startControl } from './proxy-control.ts';

const [p, d] = process.argv.slice(-2) as [string, string];
const PREFILL_KV = { do_remote_decode: true, do_remote_prefill: false };
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
    return new Response(dec.body, {
      status: dec.status,
      headers: { 'content-type': dec.headers.get('content-type') ?? 'text/event-stream' },
    });
  },
});
startControl();
// A clean exit on SIGTERM, so that a profile asked for with --cpu-prof is written.
process.on('SIGTERM', () => process.exit(0));
console.log(`pdlink: proxy listening on http://127.0.0.1:${server.port}`);
