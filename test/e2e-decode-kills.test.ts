/**
 * Kill -9 a decode engine under load, over and over, on a simulated cluster (two prefill and two
 * decode `pdlink sim-engine` processes, real links, real KV bytes): the requests a dead D was
 * serving fail, and nothing else does. Requests offered to the dead D before the Controller's
 * next snapshot leaves it out are refused by it and go to the other D, which may pull P's blocks
 * because P still holds them; a D leg that may have reached the dead D is never handed on, since
 * that D may have pulled the blocks and told P to free them. What is checked, non-streamed and
 * streamed, over ten kills each:
 * - no request is answered from blocks it does not own: every P counts the decoders' notices for
 *   blocks it no longer held (`stale_releases`), every D verifies the bytes it pulled, and every
 *   200 carries exactly the tokens of its own prompt;
 * - no failure is charged to a healthy instance (`pdlink_pd_instance_failures_total`);
 * - nothing is lost beyond the requests in flight when D died (running when it was signalled, or
 *   started before its exit was seen), and each failed one names the killed D;
 * - the Coordinator and the engines hold nothing once the load stops.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { generatedTokens, promptHash, tokenize } from '../src/sim/engine/model/tokens.ts';
import { E2E_DEADLINE_MS, proxyPost, settled, SimCluster, sseData, until } from './support/sim-cluster.ts';

const MODEL = 'e2e-decode-kills';
const CLIENTS = 6;
const KILLS = Number(process.env['PDLINK_DECODE_KILLS'] ?? 10);
/** The Coordinator's engine client (`pdlink.proxy.engine_client`): sockets by default, fetch when asked. */
const ENGINE_CLIENT = process.env['PDLINK_DECODE_KILLS_CLIENT'] === 'fetch' ? 'fetch' : 'sockets';
const MAX_TOKENS = 24;
/** Requests each client completes between two kills, so that every kill lands on a loaded D. */
const BETWEEN_KILLS = 3;
let cluster: SimCluster;

beforeAll(async () => {
  cluster = await SimCluster.start({
    prefill: 2,
    decode: 2,
    model: MODEL,
    // Decoding takes a while (24 tokens at 6 ms), pulling does not: most kills find D generating,
    // after it pulled the blocks and told P it was done with them.
    engine: { decodeMsPerToken: 6, kvLeaseMs: 5_000 },
    // The ledger's lease is P's hold of the blocks (lease_ms: as long as the engines' kv_lease_ms).
    coordinatorConfig: {
      proxy_config: { backoff_base_ms: 1, backoff_cap_ms: 5, lease_ms: 5_000 },
      pdlink: { proxy: { engine_client: ENGINE_CLIENT } },
    },
  });
}, 90_000);

afterAll(async () => {
  await cluster?.stop();
});

interface Outcome {
  readonly id: string;
  readonly ok: boolean;
  /** The failure as the client saw it: the error body's message, or why the answer was wrong. */
  readonly error?: string;
}

const prompt = (id: string) => `Request ${id}: a decode engine dies under load and its requests must not be served from stray blocks. `;

/** One request through the proxy, judged as the client sees it. */
async function send(id: string, stream: boolean): Promise<Outcome> {
  const text = prompt(id);
  const want = generatedTokens(promptHash(tokenize(text)), MAX_TOKENS);
  let res: Response;
  try {
    res = await proxyPost(cluster, '/v1/completions', { model: MODEL, prompt: text, max_tokens: MAX_TOKENS, stream }, id);
  } catch (err) {
    return { id, ok: false, error: `the proxy could not be reached: ${String(err)}` };
  }
  const body = await res.text();
  if (res.status !== 200) return { id, ok: false, error: `${res.status} ${messageOf(body)}` };
  if (!stream) {
    const got = (JSON.parse(body) as { choices: { text: string }[] }).choices[0]!.text;
    return got === want.join('') ? { id, ok: true } : { id, ok: false, error: `wrong tokens: ${JSON.stringify(got)}` };
  }
  const events = sseData(body);
  const last = events.at(-1);
  if (last !== '[DONE]') return { id, ok: false, error: `stream ended with ${messageOf(last ?? '')}` };
  const pieces = events.slice(0, -1).map((e) => (JSON.parse(e) as { choices: { text: string }[] }).choices[0]!.text);
  return pieces.join('') === want.join('') ? { id, ok: true } : { id, ok: false, error: `wrong tokens: ${JSON.stringify(pieces)}` };
}

function messageOf(body: string): string {
  try {
    return (JSON.parse(body) as { error: { message: string } }).error.message;
  } catch {
    return JSON.stringify(body.slice(0, 200));
  }
}

/** The value of one sample of the Coordinator's /metrics (0 when absent). */
async function metric(sample: string): Promise<number> {
  const text = await (await fetch(`${cluster.coordinatorUrl}/metrics`, { headers: cluster.authorization() })).text();
  const line = text.split('\n').find((l) => l.startsWith(`${sample} `));
  return line === undefined ? 0 : Number(line.slice(sample.length + 1));
}

/**
 * What the instances that are never killed have counted: the prefills' stale releases, the healthy
 * decoder's verification failures, and the failures the Coordinator charged to any of them.
 */
async function counters(healthy: readonly { name: string; id: number; role: string }[]) {
  let staleReleases = 0;
  let verifyFailures = 0;
  let charged = 0;
  for (const e of healthy) {
    const kv = (await cluster.simStatus(e.name)).kv;
    staleReleases += kv['stale_releases'] ?? 0;
    verifyFailures += kv['verify_failures'] ?? 0;
    charged += await metric(`pdlink_pd_instance_failures_total{instance="${e.id}"}`);
  }
  return { staleReleases, verifyFailures, charged };
}

/** Clients sending one request after another until stopped; what is running and what ended. */
class Load {
  readonly running = new Set<string>();
  readonly outcomes: Outcome[] = [];
  #stopped = false;
  #seq = 0;
  readonly #done: Promise<void>;

  constructor(
    readonly name: string,
    readonly stream: boolean,
  ) {
    this.#done = Promise.all(Array.from({ length: CLIENTS }, () => this.#client())).then(() => {});
  }

  /** Requests started so far (the next one's sequence number). */
  get started(): number {
    return this.#seq;
  }

  idOf(seq: number): string {
    return `${this.name}-${seq}`;
  }

  async #client(): Promise<void> {
    while (!this.#stopped) {
      const id = this.idOf(this.#seq++);
      this.running.add(id);
      const outcome = await send(id, this.stream);
      this.running.delete(id);
      this.outcomes.push(outcome);
    }
  }

  /** Resolves once `count` more requests have ended. */
  async ended(count: number): Promise<void> {
    const target = this.outcomes.length + count;
    await until(
      async () => (this.outcomes.length >= target ? true : undefined),
      E2E_DEADLINE_MS,
      () => `the load stalled`,
    );
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    await this.#done;
  }
}

describe('kill -9 a decode engine under load', () => {
  for (const stream of [false, true]) {
    test(`${KILLS} kills, ${stream ? 'streamed' : 'non-streamed'}: only the dead D's requests in flight fail, none from stray blocks`, async () => {
      const d0 = cluster.engine('d0');
      const healthy = cluster.engines.filter((e) => e.name !== 'd0');
      const load = new Load(stream ? 'kill-stream' : 'kill-whole', stream);
      /** The requests running at each kill. */
      const inFlight: Set<string>[] = [];
      const handedOverBefore = await metric('pdlink_pd_decode_retries_total{reason="refused"}');
      const before = await counters(healthy);
      try {
        for (let kill = 0; kill < KILLS; kill++) {
          await load.ended(CLIENTS * BETWEEN_KILLS);
          // D dies somewhere between the signal and its exit being seen (a process takes a while to
          // go, its sockets closed on the way): in flight at its death is what ran at the signal,
          // or started before the exit was seen.
          const running = new Set(load.running);
          const firstAfterSignal = load.started;
          process.kill(d0.process.child.pid!, 'SIGKILL');
          expect(await d0.process.exited).toBe('SIGKILL');
          for (let seq = firstAfterSignal; seq < load.started; seq++) running.add(load.idOf(seq));
          inFlight.push(running);
          // Until the Controller's next snapshot, requests offered to the dead D are refused by it.
          await load.ended(CLIENTS);
          await cluster.refresh();
          await cluster.restart('d0');
        }
        await load.ended(CLIENTS * BETWEEN_KILLS);
      } finally {
        await load.stop();
      }

      const failures = load.outcomes.filter((o) => !o.ok);
      const handedOver = (await metric('pdlink_pd_decode_retries_total{reason="refused"}')) - handedOverBefore;
      console.log(
        `${stream ? 'streamed' : 'non-streamed'} (${ENGINE_CLIENT}): ${KILLS} kills, ${load.outcomes.length} requests, ${failures.length} failed ` +
          `(${inFlight.reduce((n, s) => n + s.size, 0)} in flight when D died), ${handedOver} handed from the dead D to the other`,
      );

      const after = await counters(healthy);
      expect({
        // Nothing answered from blocks it did not own (the killed D's own checks show in its answers).
        staleReleases: after.staleReleases - before.staleReleases,
        verifyFailures: after.verifyFailures - before.verifyFailures,
        wrongAnswers: failures.filter((f) => /wrong tokens|KV verification|pulling/.test(f.error ?? '')),
        // No failure charged to a healthy instance.
        chargedToHealthy: after.charged - before.charged,
        // Nothing lost beyond the requests in flight at a kill, and each of those names the dead D.
        lostBeyondInFlight: failures.filter((f) => !inFlight.some((running) => running.has(f.id))),
        notTheDeadD: failures.filter((f) => !(f.error ?? '').includes(`decode instance ${d0.id}`)),
      }).toEqual({ staleReleases: 0, verifyFailures: 0, wrongAnswers: [], chargedToHealthy: 0, lostBeyondInFlight: [], notTheDeadD: [] });
      // Requests were offered to the dead D and served by the other: the hand-over was exercised.
      expect(handedOver).toBeGreaterThan(0);
      await settled(cluster);
    }, 600_000);
  }
});
