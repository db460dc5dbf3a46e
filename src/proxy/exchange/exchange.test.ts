import { describe, expect, test } from 'bun:test';
import type { Instance } from '../../cluster/instance.ts';
import { createRegistry } from '../../core/metrics.ts';
import type { CompletionBody } from '../../schema/completions.ts';
import { runDecode } from '../decode/decode.ts';
import { Exchange, Stop, type ExchangeDeps } from './exchange.ts';
import { ProxyMetrics } from '../telemetry/metrics.ts';
import type { BreakerReporter, PairPicker, ReservationLedger } from './ports.ts';
import { resolveProxySettings } from './settings.ts';

/** Deps that record every call that would touch an instance or its capacity. */
function recordingDeps() {
  const calls: string[] = [];
  const picker: PairPicker = {
    pick: () => {
      calls.push('pick');
      return { ok: false, message: 'no pair in this test' };
    },
  };
  const ledger = new Proxy({} as ReservationLedger, {
    get: (_target, name) => () => {
      calls.push(`ledger.${String(name)}`);
      return false;
    },
  });
  const breakers: BreakerReporter = {
    recordSuccess: (id) => calls.push(`success ${id}`),
    recordFailure: (id) => calls.push(`failure ${id}`),
  };
  const metrics = createRegistry();
  const deps: ExchangeDeps = {
    picker,
    ledger,
    breakers,
    metrics: new ProxyMetrics(metrics),
    settings: resolveProxySettings({}, { maxRetries: 2 }),
  };
  return { calls, deps, metrics };
}

function exchangeOf(body: Record<string, unknown>, deps: ExchangeDeps, onEnd: () => void = () => {}): Exchange {
  const request = {
    kind: 'completions' as const,
    api: 'completions',
    body: body as CompletionBody,
    requestId: 'r-1',
    transferId: 't-1',
    clientHeaders: {},
    clientSignal: new AbortController().signal,
  };
  return new Exchange(request, deps, onEnd);
}

async function expectClientError(res: Response): Promise<void> {
  expect(res.status).toBe(400);
  expect(res.headers.get('x-request-id')).toBe('r-1');
  const answer = (await res.json()) as { error: { message: string; type: string; code: string } };
  expect(answer.error.type).toBe('invalid_request_error');
  expect(answer.error.code).toBe('bad_request');
  expect(answer.error.message).toStartWith('request body cannot be forwarded as JSON: ');
}

async function outcomes(metrics: ReturnType<typeof createRegistry>): Promise<unknown[]> {
  return ((await metrics.getSingleMetric('pdlink_pd_requests_total')?.get())?.values ?? []).map((v) => [v.labels['outcome'], v.value]);
}

describe('a P leg that cannot be serialised', () => {
  // The body reader holds parsed bodies to the nesting limit; a gateway calling the proxy's parts
  // directly is not bound by it, and neither is a value JSON cannot write (a BigInt).
  const unserialisable: [string, () => unknown][] = [
    ['a BigInt', () => 10n],
    [
      '100,000 nested arrays',
      () => {
        let deep: unknown = [];
        for (let i = 0; i < 100_000; i++) deep = [deep];
        return deep;
      },
    ],
  ];

  test.each(unserialisable)('holding %s is the client’s 400, before any pair is picked or instance charged', async (_name, extra) => {
    const { calls, deps, metrics } = recordingDeps();
    let ended = 0;
    const exchange = exchangeOf({ model: 'm', prompt: 'hi', extra: extra() }, deps, () => ended++);
    await expectClientError(await exchange.run());
    expect(calls).toEqual([]);
    expect(ended).toBe(1);
    expect(await outcomes(metrics)).toEqual([['invalid', 1]]);
    expect((await metrics.getSingleMetric('pdlink_pd_retries_total')?.get())?.values ?? []).toEqual([]);
  });
});

describe('a D leg that cannot be serialised', () => {
  test('a field P never sees (stream_options) is the client’s 400; D is neither asked nor charged', async () => {
    const { calls, deps, metrics } = recordingDeps();
    // A port nothing listens on: the test fails loudly if the leg is sent after all.
    const d = { id: 21, ip: '127.0.0.1', port: 9 } as Instance;
    const p = { id: 11, ip: '127.0.0.1', port: 9 } as Instance;
    const exchange = exchangeOf({ model: 'm', prompt: 'hi', stream_options: { include_usage: 10n } }, deps);
    let thrown: unknown;
    try {
      await runDecode(exchange, { pair: { ok: true, p, d }, kvTransferParams: { remote_block_ids: [1] }, answeredAt: 0 }, () => {
        throw new Error('the leg must not move to another D');
      });
    } catch (err) {
      thrown = err;
    }
    expect(thrown).toBeInstanceOf(Stop);
    await expectClientError((thrown as Stop).response);
    expect(calls).toEqual([]);
    expect(await outcomes(metrics)).toEqual([['invalid', 1]]);
  });
});
