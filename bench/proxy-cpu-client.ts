/**
 * The proxy CPU benchmark's client: the streamed PD request every mode answers, sent through a
 * proxy or as a client calling P then D itself, at a concurrency, one after another, or paced.
 */
export const CONCURRENCY = 32;
export const MODEL = 'bench';
export const BODY = JSON.stringify({ model: MODEL, prompt: 'word '.repeat(51).trim(), max_tokens: 16, stream: true });
export const PREFILL_BODY = JSON.stringify({
  ...JSON.parse(BODY),
  stream: false,
  max_tokens: 1,
  kv_transfer_params: { do_remote_decode: true, do_remote_prefill: false },
});

let seq = 0;
function headers(): Record<string, string> {
  return { 'content-type': 'application/json', 'x-request-id': `cpu-${seq++}` };
}

async function drain(res: Response): Promise<void> {
  const text = await res.text();
  if (res.status !== 200 || !text.endsWith('data: [DONE]\n\n')) throw new Error(`bad answer ${res.status}: ${text.slice(0, 200)}`);
}

/** One PD request as each mode sends it. */
export type Send = () => Promise<void>;

export function viaProxy(url: string): Send {
  return async () => drain(await fetch(`${url}/v1/completions`, { method: 'POST', headers: headers(), body: BODY }));
}

/** The client calls P, then D with P's kv_transfer_params (directly, or through nginx's two listeners). */
export function clientPd(pUrl: string, dUrl: string): Send {
  return async () => {
    const h = headers();
    const pre = await fetch(`${pUrl}/v1/completions`, { method: 'POST', headers: h, body: PREFILL_BODY });
    const answer = (await pre.json()) as { kv_transfer_params?: unknown };
    if (pre.status !== 200) throw new Error(`prefill answered ${pre.status}`);
    const body = `${BODY.slice(0, -1)},"kv_transfer_params":${JSON.stringify(answer.kv_transfer_params)}}`;
    await drain(await fetch(`${dUrl}/v1/completions`, { method: 'POST', headers: h, body }));
  };
}

/** The D leg alone, through nginx's D listener: one hop. */
export function decodeOnly(dUrl: string): Send {
  const body = `${BODY.slice(0, -1)},"kv_transfer_params":{"remote_engine_id":"bench-p","remote_block_ids":[1,2,3,4]}}`;
  return async () => drain(await fetch(`${dUrl}/v1/completions`, { method: 'POST', headers: headers(), body }));
}

export async function concurrent(send: Send, n: number, concurrency = CONCURRENCY): Promise<number> {
  let next = 0;
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < n) {
        next++;
        await send();
      }
    }),
  );
  return n / ((performance.now() - t0) / 1000);
}

export async function sequential(send: Send, n: number): Promise<number[]> {
  const ms: number[] = [];
  for (let i = 0; i < n; i++) {
    const t0 = performance.now();
    await send();
    ms.push(performance.now() - t0);
  }
  return ms;
}

/** `n` requests started at `rate` a second, whatever the answers' pace. */
export async function paced(send: Send, n: number, rate: number): Promise<void> {
  const t0 = performance.now();
  const all: Promise<void>[] = [];
  for (let i = 0; i < n; i++) {
    const due = t0 + (i * 1000) / rate;
    const wait = due - performance.now();
    if (wait > 0) await Bun.sleep(wait);
    all.push(send());
  }
  await Promise.all(all);
}
