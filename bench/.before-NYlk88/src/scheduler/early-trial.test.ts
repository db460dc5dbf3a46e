import { describe, expect, test } from 'bun:test';
import { TestCluster, type TestInstanceSpec } from '../../test/doubles/cluster.ts';
import { trialEarly } from './early-trial.ts';
import { createHealth } from './breakers.ts';
import { checkPickRequest } from './request.ts';
import { TestLoads } from '../../test/doubles/scheduler.ts';
import { Topology } from './topology.ts';

function setup(specs: TestInstanceSpec[]) {
  const clock = { now: 0 };
  const health = createHealth({ clock: () => clock.now, failureThreshold: 1, cooldownMs: 1_000 });
  const topology = new Topology({ cluster: new TestCluster(specs), loads: new TestLoads(), breakers: health });
  return { clock, health, topology };
}

const P = (id: number, group = 0): TestInstanceSpec => ({ id, role: 'prefill', group });
const D = (id: number, peers: number[], group = 0): TestInstanceSpec => ({ id, role: 'decode', group, peers });
const request = (excludeP: number[] = [], excludeD: number[] = []) =>
  checkPickRequest({ excludeP: new Set(excludeP), excludeD: new Set(excludeD) });

describe('trialEarly', () => {
  test('no linked P admits requests: a P gets the trial, even when D’s are open too', () => {
    const { health, topology } = setup([P(0), D(10, [0])]);
    health.recordFailure(10);
    health.recordFailure(0);
    expect(trialEarly(topology, health, request())).toBe(0);
    expect(health.state(10)).toBe('open');
  });

  test('a linked P admits requests: a D linked to a usable P, the one whose cool-down ends first', () => {
    const { clock, health, topology } = setup([P(0), P(1, 1), D(10, [0]), D(11, [0]), D(12, [1], 1)]);
    health.recordFailure(12);
    clock.now += 1;
    health.recordFailure(11);
    clock.now += 1;
    health.recordFailure(10);
    expect(trialEarly(topology, health, request([1]))).toBe(11); // 12 pairs only with the excluded P1
    expect(trialEarly(topology, health, request([1], [10]))).toBeUndefined(); // 11's trial runs
  });

  test('nothing open, or only instances the request excludes: no trial', () => {
    const { health, topology } = setup([P(0), D(10, [0])]);
    expect(trialEarly(topology, health, request())).toBeUndefined();
    health.recordFailure(10);
    expect(trialEarly(topology, health, request([], [10]))).toBeUndefined();
    expect(health.state(10)).toBe('open');
  });
});
