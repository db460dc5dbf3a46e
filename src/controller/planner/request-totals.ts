/**
 * What the SLA planner reads of the Coordinators: the request totals each one reports in
 * `GET /v1/coordinator_info` (`requests_total`, `input_tokens_total`, `output_tokens_total`, pdlink's
 * additions to MindIE's body), sampled over time, so that the request rate and the prompt and output
 * token rates over a window come from the counts' growth. A Coordinator that restarted (its counts
 * went down) adds only what it counted since; one that does not answer adds nothing for that sample.
 */
import type { Outgoing } from '../outgoing.ts';
import type { RequestMix } from './pressure.ts';

interface Totals {
  readonly at: number;
  readonly requests: number;
  readonly input: number;
  readonly output: number;
}

export class RequestTotals {
  readonly #client: Outgoing;
  readonly #samples = new Map<string, Totals[]>();
  #keepMs: number;

  /** @example const totals = new RequestTotals(client, 60_000); await totals.sample(urls, Date.now()); */
  constructor(client: Outgoing, keepMs: number) {
    this.#client = client;
    this.#keepMs = keepMs;
  }

  set keepMs(ms: number) {
    this.#keepMs = ms;
  }

  /**
   * Reads every Coordinator's totals once (in parallel; a failure is skipped).
   * @example await totals.sample(['http://10.0.0.1:1026'], Date.now());
   */
  async sample(urls: readonly string[], now: number): Promise<void> {
    await Promise.all(urls.map((url) => this.#read(url, now)));
    for (const url of [...this.#samples.keys()]) if (!urls.includes(url)) this.#samples.delete(url);
  }

  /**
   * The rates since `since` (at least two samples of some Coordinator in the span); undefined when
   * no Coordinator reported totals twice in it.
   * @example totals.mix(now - windowMs)?.requestsPerS
   */
  mix(since: number): RequestMix | undefined {
    let requests = 0;
    let input = 0;
    let output = 0;
    let span = 0;
    for (const samples of this.#samples.values()) {
      const within = samples.filter((s) => s.at >= since);
      if (within.length < 2) continue;
      for (let i = 1; i < within.length; i++) {
        const a = within[i - 1]!;
        const b = within[i]!;
        // A restart starts its counts again: what it counted since is the whole of b.
        const grew = (x: number, y: number): number => (y >= x ? y - x : y);
        requests += grew(a.requests, b.requests);
        input += grew(a.input, b.input);
        output += grew(a.output, b.output);
      }
      span = Math.max(span, within.at(-1)!.at - within[0]!.at);
    }
    if (span <= 0) return undefined;
    const perS = (n: number): number => (n * 1000) / span;
    return { requestsPerS: perS(requests), inputTokensPerS: perS(input), outputTokensPerS: perS(output) };
  }

  async #read(url: string, now: number): Promise<void> {
    let totals: Totals | undefined;
    try {
      const { status, body } = await this.#client.get(`${url}/v1/coordinator_info`);
      totals = status === 200 ? readTotals(body, now) : undefined;
    } catch {
      totals = undefined;
    }
    if (totals === undefined) return;
    const samples = this.#samples.get(url) ?? [];
    samples.push(totals);
    while (samples.length > 2 && samples[0]!.at < now - this.#keepMs) samples.shift();
    this.#samples.set(url, samples);
  }
}

function readTotals(body: unknown, at: number): Totals | undefined {
  if (typeof body !== 'object' || body === null) return undefined;
  const b = body as Record<string, unknown>;
  const n = (key: string): number | undefined => {
    const x = b[key];
    return typeof x === 'number' && Number.isFinite(x) && x >= 0 ? x : undefined;
  };
  const requests = n('requests_total');
  const input = n('input_tokens_total');
  const output = n('output_tokens_total');
  if (requests === undefined || input === undefined || output === undefined) return undefined;
  return { at, requests, input, output };
}
