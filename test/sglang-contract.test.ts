/**
 * The SGLang path against engines pdlink did not write: a small fake of SGLang's disaggregated P
 * and D, written here from SGLang's contract. P checks the bootstrap fields, registers the room and
 * answers once D has pulled it; D checks the same fields, waits for the room, then answers (whole
 * or streamed). Each fake records what it was sent and whether the proxy dropped its leg.
 */
import { afterEach, describe, expect, test } from 'bun:test';
import { TestCluster, testInstance } from './doubles/cluster.ts';
import type { Instance } from '../src/cluster/instance.ts';
import { ManualClock } from '../src/core/lease-clock.ts';
import { createRegistry } from '../src/core/metrics.ts';
import { proxyRoutes } from '../src/http/inference.ts';
import { KvLedger } from '../src/ledger/ledger.ts';
import type { PairPicker, PlacementRequest } from '../src/proxy/exchange/ports.ts';
import { resolveProxySettings } from '../src/proxy/exchange/settings.ts';

const BOOTSTRAP_PORT = 9123;
/** Rooms P registered, each with a resolver D waits on (SGLang's bootstrap server, in memory). */
const rooms = new Map<string, { filled: Promise<void>; fill: () => void; pulled: Promise<void>; pull: () => void }>();

function room(id: string) {
  let entry = rooms.get(id);
  if (entry === undefined) {
    let fill!: () => void;
    let pull!: () => void;
    const filled = new Promise<void>((r) => (fill = r));
    const pulled = new Promise<void>((r) => (pull = r));
    entry = { filled, fill, pulled, pull };
    rooms.set(id, entry);
  }
  return entry;
}

interface Seen {
  raw: string;
  body: Record<string, unknown>;
  aborted: Promise<void>;
}

interface FakeOptions {
  /** Status P or D answers instead of doing its part. */
  failWith?: number;
}

/** The `bootstrap_room` digits exactly as sent (a 63-bit integer does not survive JSON.parse). */
function roomDigits(raw: string): string[] {
  const match = /"bootstrap_room":(\[[^\]]*\]|\d+)/.exec(raw);
  if (match === null) throw new Error('no bootstrap_room');
  return match[1]!.startsWith('[') ? match[1]!.slice(1, -1).split(',') : [match[1]!];
}

function checkFields(seen: Seen): string[] {
  const { body } = seen;
  const digits = roomDigits(seen.raw);
  for (const d of digits) {
    if (!/^\d+$/.test(d) || BigInt(d) >= 2n ** 63n) throw new Error(`bad room ${d}`);
  }
  const batched = Array.isArray(body['bootstrap_room']);
  const hosts = batched ? (body['bootstrap_host'] as unknown[]) : [body['bootstrap_host']];
  const ports = batched ? (body['bootstrap_port'] as unknown[]) : [body['bootstrap_port']];
  if (hosts.length !== digits.length || ports.length !== digits.length) throw new Error('field arrays of different lengths');
  if (!hosts.every((h) => h === '127.0.0.1')) throw new Error('bad bootstrap_host');
  if (!ports.every((p) => p === BOOTSTRAP_PORT)) throw new Error('bad bootstrap_port');
  return digits;
}

function fakeEngine(mode: 'prefill' | 'decode', options: FakeOptions = {}) {
  const seen: Seen[] = [];
  const server = Bun.serve({
    hostname: '127.0.0.1',
    port: 0,
    async fetch(req) {
      const raw = await req.text();
      let abortedNow!: () => void;
      const aborted = new Promise<void>((r) => (abortedNow = r));
      req.signal.addEventListener('abort', () => abortedNow(), { once: true });
      const entry: Seen = { raw, body: JSON.parse(raw) as Record<string, unknown>, aborted };
      seen.push(entry);
      let digits: string[];
      try {
        digits = checkFields(entry);
      } catch (err) {
        return Response.json({ error: { message: (err as Error).message } }, { status: 400 });
      }
      if (options.failWith !== undefined) {
        return Response.json({ error: { message: `${mode} failed` } }, { status: options.failWith });
      }
      const wantsLogprobs = entry.body['return_logprob'] === true;
      if (mode === 'prefill') {
        for (const d of digits) room(d).fill();
        // SGLang's P answers once its KV has been handed over (or the transfer was dropped).
        await Promise.race([Promise.all(digits.map((d) => room(d).pulled)), aborted]);
        const one = {
          text: '',
          meta_info: {
            id: 'p',
            ...(wantsLogprobs
              ? {
                  input_token_logprobs: [
                    [-0.5, 1],
                    [-0.25, 2],
                  ],
                }
              : {}),
          },
        };
        return Response.json(digits.length > 1 && Array.isArray(entry.body['bootstrap_room']) ? digits.map(() => one) : one);
      }
      await Promise.race([Promise.all(digits.map((d) => room(d).filled)), aborted]);
      for (const d of digits) room(d).pull();
      if (entry.body['stream'] === true) {
        const events = ['data: {"choices":[{"text":"he"}]}\n\n', 'data: {"choices":[{"text":"llo"}]}\n\n', 'data: [DONE]\n\n'];
        return new Response(events.join(''), { headers: { 'content-type': 'text/event-stream' } });
      }
      return Response.json({
        id: 'cmpl-d',
        object: 'text_completion',
        choices: [{ index: 0, text: 'hello', finish_reason: 'length' }],
        meta_info: { id: 'd', ...(wantsLogprobs ? { input_token_logprobs: [[null, 0]] } : {}) },
      });
    },
  });
  return { server, seen, stop: () => server.stop(true) };
}

type Fake = ReturnType<typeof fakeEngine>;
const started: Fake[] = [];

function engine(mode: 'prefill' | 'decode', options?: FakeOptions): Fake {
  const fake = fakeEngine(mode, options);
  started.push(fake);
  return fake;
}

afterEach(() => {
  for (const fake of started.splice(0)) fake.stop();
  rooms.clear();
});

function instanceOn(id: number, role: 'prefill' | 'decode', fake: Fake): Instance {
  return { ...testInstance({ id, role }), port: fake.server.port!, wire: role === 'prefill' ? { bootstrap_port: BOOTSTRAP_PORT } : {} };
}

/** A proxy in sglang mode over `pairs`, picked in order (then the last again), with a real ledger. */
function proxyOver(pairs: [Instance, Instance][], maxRetries = 0) {
  const cluster = new TestCluster();
  const ids = new Map<number, Instance>();
  for (const [p, d] of pairs) {
    ids.set(p.id, p);
    ids.set(d.id, d);
  }
  cluster.refresh([...ids.values()].map((i) => ({ id: i.id, role: i.role, availSlots: 4, availBlocks: 100 })));
  const ledger = new KvLedger({ cluster, clock: new ManualClock(1_000_000) });
  const picks: PlacementRequest[] = [];
  let next = 0;
  const picker: PairPicker = {
    pick: (request) => {
      picks.push(request);
      const candidates = pairs.filter(([p, d]) => !request.excludeP.has(p.id) && !request.excludeD.has(d.id));
      const pair = candidates[Math.min(next++, candidates.length - 1)];
      return pair === undefined ? { ok: false, message: 'no pair left' } : { ok: true, p: pair[0], d: pair[1] };
    },
  };
  const failures: number[] = [];
  const settings = resolveProxySettings({ pdlink: { proxy: { protocol: 'sglang' } } }, { maxRetries, backoffBaseMs: 1, backoffCapMs: 1 });
  const proxy = proxyRoutes({
    scheduler: picker,
    ledger,
    settings,
    metrics: createRegistry(),
    breakers: { recordSuccess: () => {}, recordFailure: (id) => failures.push(id) },
  });
  return { proxy, ledger, failures, picks };
}

function post(proxy: ReturnType<typeof proxyOver>['proxy'], body: Record<string, unknown>) {
  return proxy.request('/v1/completions', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
}

describe('pdlink in front of SGLang engines', () => {
  test('both legs get the same bootstrap fields at once; the client gets D answer; the ledger ends at zero', async () => {
    const p = engine('prefill');
    const d = engine('decode');
    const { proxy, ledger, failures } = proxyOver([[instanceOn(0, 'prefill', p), instanceOn(1, 'decode', d)]]);
    const res = await post(proxy, { model: 'm', prompt: 'hi', max_tokens: 4 });
    expect(res.status).toBe(200);
    expect(((await res.json()) as { choices: { text: string }[] }).choices[0]!.text).toBe('hello');
    expect(res.headers.get('x-pdlink-prefill')).toBe('0');
    expect(p.seen).toHaveLength(1);
    expect(d.seen).toHaveLength(1);
    expect(roomDigits(p.seen[0]!.raw)).toEqual(roomDigits(d.seen[0]!.raw));
    expect(p.seen[0]!.body['bootstrap_port']).toBe(BOOTSTRAP_PORT);
    expect(p.seen[0]!.body['stream']).toBe(false);
    expect(d.seen[0]!.body['max_tokens']).toBe(4);
    expect(ledger.totals().active).toBe(0);
    expect(ledger.totals().reservedBlocks).toBe(0);
    expect(failures).toEqual([]);
  });

  test('a fresh room for every request', async () => {
    const p = engine('prefill');
    const d = engine('decode');
    const { proxy } = proxyOver([[instanceOn(0, 'prefill', p), instanceOn(1, 'decode', d)]]);
    for (let i = 0; i < 3; i++) expect((await post(proxy, { model: 'm', prompt: 'hi' })).status).toBe(200);
    expect(new Set(p.seen.map((s) => roomDigits(s.raw)[0])).size).toBe(3);
  });

  test("streaming: D's events are relayed, D is asked to stream and P is not", async () => {
    const p = engine('prefill');
    const d = engine('decode');
    const { proxy, ledger } = proxyOver([[instanceOn(0, 'prefill', p), instanceOn(1, 'decode', d)]]);
    const res = await post(proxy, { model: 'm', prompt: 'hi', stream: true, stream_options: { include_usage: true } });
    expect(res.status).toBe(200);
    expect(await res.text()).toBe('data: {"choices":[{"text":"he"}]}\n\ndata: {"choices":[{"text":"llo"}]}\n\ndata: [DONE]\n\n');
    expect(d.seen[0]!.body['stream']).toBe(true);
    expect(p.seen[0]!.body['stream']).toBe(false);
    expect(p.seen[0]!.body['stream_options']).toBeUndefined();
    expect(ledger.totals().active).toBe(0);
  });

  test('a batched prompt gets arrays of the three fields, one room per item', async () => {
    const p = engine('prefill');
    const d = engine('decode');
    const { proxy } = proxyOver([[instanceOn(0, 'prefill', p), instanceOn(1, 'decode', d)]]);
    const res = await post(proxy, { model: 'm', prompt: ['a', 'b', 'c'] });
    expect(res.status).toBe(200);
    const digits = roomDigits(d.seen[0]!.raw);
    expect(digits).toHaveLength(3);
    expect(new Set(digits).size).toBe(3);
    expect(d.seen[0]!.body['bootstrap_host']).toEqual(['127.0.0.1', '127.0.0.1', '127.0.0.1']);
    expect(roomDigits(p.seen[0]!.raw)).toEqual(digits);
  });

  test("return_logprob: P's prompt logprobs are merged in front of D's", async () => {
    const p = engine('prefill');
    const d = engine('decode');
    const { proxy } = proxyOver([[instanceOn(0, 'prefill', p), instanceOn(1, 'decode', d)]]);
    const res = await post(proxy, { model: 'm', prompt: 'hi', return_logprob: true });
    expect(res.status).toBe(200);
    const answer = (await res.json()) as { meta_info: { input_token_logprobs: unknown[]; id: string } };
    expect(answer.meta_info.input_token_logprobs).toEqual([
      [-0.5, 1],
      [-0.25, 2],
      [null, 0],
    ]);
    expect(answer.meta_info.id).toBe('d');
  });

  test('a P that fails aborts D; the pair is tried again with a fresh room on another P', async () => {
    const badP = engine('prefill', { failWith: 503 });
    const goodP = engine('prefill');
    const d = engine('decode');
    const dInstance = instanceOn(2, 'decode', d);
    const { proxy, ledger, failures } = proxyOver(
      [
        [instanceOn(0, 'prefill', badP), dInstance],
        [instanceOn(1, 'prefill', goodP), dInstance],
      ],
      1,
    );
    const res = await post(proxy, { model: 'm', prompt: 'hi' });
    expect(res.status).toBe(200);
    expect(failures).toEqual([0]);
    expect(d.seen).toHaveLength(2);
    // D's first leg waited for a room that P 0 never filled: the proxy dropped it.
    await d.seen[0]!.aborted;
    expect(roomDigits(d.seen[0]!.raw)).not.toEqual(roomDigits(d.seen[1]!.raw));
    expect(res.headers.get('x-pdlink-prefill')).toBe('1');
    expect(ledger.totals().active).toBe(0);
  });

  test('a D that fails aborts P, and with no retry left the client gets a 502 naming D', async () => {
    const p = engine('prefill');
    const d = engine('decode', { failWith: 500 });
    const { proxy, ledger, failures } = proxyOver([[instanceOn(0, 'prefill', p), instanceOn(1, 'decode', d)]]);
    const res = await post(proxy, { model: 'm', prompt: 'hi' });
    expect(res.status).toBe(502);
    expect(((await res.json()) as { error: { message: string } }).error.message).toContain('decode instance 1 answered 500');
    // P held its KV for a D that will never pull it: the proxy dropped P's leg.
    await p.seen[0]!.aborted;
    expect(failures).toEqual([1]);
    expect(ledger.totals().active).toBe(0);
  });

  test("a D's 4xx is the client's answer: nothing retried, nobody blamed", async () => {
    const p = engine('prefill');
    const d = engine('decode', { failWith: 400 });
    const { proxy, ledger, failures, picks } = proxyOver([[instanceOn(0, 'prefill', p), instanceOn(1, 'decode', d)]], 3);
    const res = await post(proxy, { model: 'm', prompt: 'hi' });
    expect(res.status).toBe(400);
    expect(failures).toEqual([]);
    expect(picks).toHaveLength(1);
    expect(ledger.totals().active).toBe(0);
  });

  test("a P's 4xx is the client's answer and D's leg is dropped", async () => {
    const p = engine('prefill', { failWith: 422 });
    const d = engine('decode');
    const { proxy, ledger, failures, picks } = proxyOver([[instanceOn(0, 'prefill', p), instanceOn(1, 'decode', d)]], 3);
    const res = await post(proxy, { model: 'm', prompt: 'hi' });
    expect(res.status).toBe(422);
    await d.seen[0]!.aborted;
    expect(failures).toEqual([]);
    expect(picks).toHaveLength(1);
    expect(ledger.totals().active).toBe(0);
  });
});
