import { describe, expect, test } from 'bun:test';
import { TestCluster } from '../../test/doubles/cluster.ts';
import type { BreakerReporter, PairPicker } from '../proxy/exchange/ports.ts';
import { createHealth } from './breakers.ts';
import { createScheduler } from './scheduler.ts';

describe('the scheduler and the circuit breakers fit the proxy’s ports', () => {
  test('PairPicker and BreakerReporter, structurally, with the proxy’s request shape', () => {
    const health = createHealth();
    const scheduler = createScheduler({
      cluster: new TestCluster([
        { id: 0, role: 'prefill' },
        { id: 1, role: 'decode', peers: [0] },
      ]),
      health,
      policy: { prefill: 'cache_affinity' },
      blockSize: 2,
    });
    const picker: PairPicker = scheduler;
    const reporter: BreakerReporter = health;
    const request = { promptText: 'a system prompt, then a question', excludeP: new Set<number>(), excludeD: new Set<number>() };
    const result = picker.pick(request);
    expect(result.ok).toBe(true);
    if (result.ok) picker.recordPrefill?.(result.p.id, request);
    expect(picker.pick(request) as unknown).toMatchObject({ ok: true, reason: 'cache_hit' });
    reporter.recordFailure(0);
    reporter.recordSuccess(1);
    const none = picker.pick({ ...request, excludeP: new Set([0]) });
    expect(none as unknown).toEqual({
      ok: false,
      reason: 'excluded',
      message: 'every prefill/decode pair with room is excluded by the request',
    });
  });
});
