import { describe, expect, test } from 'bun:test';
import type { Instance } from '../../cluster/instance.ts';
import { createRegistry } from '../../core/metrics.ts';
import type { CompletionBody } from '../../schema/completions.ts';
import { Exchange } from '../exchange/exchange.ts';
import { ProxyMetrics } from './metrics.ts';
import type { PickedPair, ReservationLedger } from '../exchange/ports.ts';
import { resolveProxySettings } from '../exchange/settings.ts';
import { NO_TRACE, NO_TRACING } from './trace.ts';
import type { ExchangeRequest } from '../exchange/types.ts';

function requestOf(): ExchangeRequest {
  return {
    kind: 'completions',
    api: 'completions',
    body: { model: 'm', prompt: 'p' } as CompletionBody,
    requestId: 'r-1',
    transferId: 't-1',
    clientHeaders: { traceparent: '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01' },
    clientSignal: new AbortController().signal,
  };
}

function pairOf(p: number, d: number): PickedPair {
  const instance = (id: number): Instance => ({ id, ip: '127.0.0.1', port: 1025 }) as unknown as Instance;
  return { p: instance(p), d: instance(d) } as PickedPair;
}

describe('tracing off (the default)', () => {
  test('every request shares the one frozen NO_TRACE, which leaves the legs’ headers alone', () => {
    const first = NO_TRACING.start(requestOf());
    expect(first).toBe(NO_TRACE);
    expect(NO_TRACING.start(requestOf())).toBe(first);
    expect(Object.isFrozen(NO_TRACE)).toBe(true);
    const headers: Record<string, string> = { 'content-type': 'application/json' };
    NO_TRACE.prefillSent(pairOf(1, 2), headers);
    NO_TRACE.decodeSent(pairOf(1, 2), headers);
    expect(Object.keys(headers)).toEqual(['content-type']);
  });

  test('an exchange whose deps have no tracing holds NO_TRACE', () => {
    const deps = {
      picker: { pick: () => ({ ok: false as const, message: 'none' }) },
      ledger: {} as ReservationLedger,
      breakers: undefined,
      metrics: new ProxyMetrics(createRegistry()),
      settings: resolveProxySettings({}),
    };
    const exchange = new Exchange(requestOf(), deps, () => {});
    expect(exchange.trace).toBe(NO_TRACE);
    exchange.end('ok', { kind: 'none' });
  });
});
