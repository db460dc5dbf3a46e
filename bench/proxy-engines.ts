/**
 * The fast fake engines every mode of the proxy CPU benchmark talks to, so that each proxy is
 * measured in front of the same two servers: a P that answers its one-token leg at once with
 * `kv_transfer_params`, and a D that streams 16 SSE events and `[DONE]` (chunked) at once. They do
 * no KV work, so the engines cost as little as a Bun.serve can, and what differs between modes is
 * the proxy alone.
 *
 * Run: bun bench/proxy-engines.ts → prints `pdlink: prefill listening on …` and `… decode …`.
 */

const KV_TRANSFER_PARAMS = {
  do_remote_prefill: true,
  do_remote_decode: false,
  remote_engine_id: 'bench-p',
  remote_block_ids: [1, 2, 3, 4],
  remote_host: '127.0.0.1',
  remote_port: 1,
};
const PREFILL_ANSWER = JSON.stringify({
  id: 'cmpl-bench',
  object: 'text_completion',
  model: 'bench',
  choices: [{ index: 0, text: ' x', finish_reason: 'length' }],
  kv_transfer_params: KV_TRANSFER_PARAMS,
});
const encoder = new TextEncoder();
const EVENTS = [
  ...Array.from({ length: 16 }, (_, i) =>
    encoder.encode(`data: ${JSON.stringify({ id: 'cmpl-bench', object: 'text_completion', choices: [{ index: 0, text: ` t${i}` }] })}\n\n`),
  ),
  encoder.encode('data: [DONE]\n\n'),
];

const prefill = Bun.serve({
  hostname: '127.0.0.1',
  port: 0,
  async fetch(req) {
    await req.arrayBuffer();
    return new Response(PREFILL_ANSWER, { headers: { 'content-type': 'application/json' } });
  },
});

const decode = Bun.serve({
  hostname: '127.0.0.1',
  port: 0,
  async fetch(req) {
    await req.arrayBuffer();
    let next = 0;
    const body = new ReadableStream<Uint8Array>({
      pull(controller) {
        controller.enqueue(EVENTS[next++]!);
        if (next === EVENTS.length) controller.close();
      },
    });
    return new Response(body, { headers: { 'content-type': 'text/event-stream' } });
  },
});

console.log(`pdlink: prefill listening on http://127.0.0.1:${prefill.port}`);
console.log(`pdlink: decode listening on http://127.0.0.1:${decode.port}`);
