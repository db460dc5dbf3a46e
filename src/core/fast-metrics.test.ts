import { describe, expect, test } from 'bun:test';
import { Counter, Histogram, Registry } from 'prom-client';
import { FastCounter, FastHistogram } from './fast-metrics.ts';

const BUCKETS = [0.005, 0.01, 0.1, 1, 10];
const SAMPLES = [0.001, 0.005, 0.0051, 0.05, 0.1, 0.7, 3, 10, 42, 0];

describe('FastHistogram', () => {
  test('is exposed exactly as prom-client exposes the same observations', async () => {
    const ours = new Registry();
    const theirs = new Registry();
    const fast = new FastHistogram({ name: 'pdlink_t_seconds', help: 'A test.', buckets: BUCKETS, registers: [ours] }).labels();
    const slow = new Histogram({ name: 'pdlink_t_seconds', help: 'A test.', buckets: BUCKETS, registers: [theirs] });
    for (const s of SAMPLES) {
      fast.observe(s);
      slow.observe(s);
    }
    expect(await ours.metrics()).toBe(await theirs.metrics());
  });

  test('labelled series are exposed like prom-client', async () => {
    const ours = new Registry();
    const theirs = new Registry();
    const fast = new FastHistogram({ name: 'pdlink_l_seconds', help: 'L.', buckets: BUCKETS, labelNames: ['leg'], registers: [ours] });
    const slow = new Histogram({ name: 'pdlink_l_seconds', help: 'L.', buckets: BUCKETS, labelNames: ['leg'], registers: [theirs] });
    const p = fast.labels('prefill');
    const d = fast.labels('decode');
    for (const s of SAMPLES) {
      p.observe(s);
      slow.labels('prefill').observe(s);
      d.observe(s * 2);
      slow.labels('decode').observe(s * 2);
    }
    const lines = (text: string) => text.split('\n').sort();
    expect(lines(await ours.metrics())).toEqual(lines(await theirs.metrics()));
  });

  test('the same label values give the same series; a wrong count of values is refused', () => {
    const h = new FastHistogram({ name: 'pdlink_s_seconds', help: 'S.', buckets: BUCKETS, labelNames: ['a'], registers: [] });
    expect(h.labels('x')).toBe(h.labels('x'));
    expect(() => h.labels()).toThrow('expected 1 label values (a), got 0');
  });

  test('a value that is not a finite number is refused and changes nothing', async () => {
    const registry = new Registry();
    const h = new FastHistogram({ name: 'pdlink_n_seconds', help: 'N.', buckets: BUCKETS, registers: [registry] }).labels();
    h.observe(1);
    expect(() => h.observe(Number.NaN)).toThrow('pdlink_n_seconds: value is not a finite number: NaN');
    expect(() => h.observe(Infinity)).toThrow('not a finite number');
    expect(await registry.metrics()).toContain('pdlink_n_seconds_count 1\n');
  });

  test('reset drops the observations, as the registry asks', async () => {
    const registry = new Registry();
    const h = new FastHistogram({ name: 'pdlink_r_seconds', help: 'R.', buckets: BUCKETS, registers: [registry] }).labels();
    h.observe(0.5);
    registry.resetMetrics();
    expect(await registry.metrics()).not.toContain('pdlink_r_seconds_count');
    h.observe(2);
    const text = await registry.metrics();
    expect(text).toContain('pdlink_r_seconds_count 1\n');
    expect(text).toContain('pdlink_r_seconds_sum 2\n');
  });
});

describe('series shown before anything moved, as prom-client shows them', () => {
  test('unlabelled metrics show zero from the start; a bound labelled series shows only once it moves', async () => {
    const ours = new Registry();
    const theirs = new Registry();
    new FastHistogram({ name: 'pdlink_u_seconds', help: 'U.', buckets: BUCKETS, registers: [ours] });
    new Histogram({ name: 'pdlink_u_seconds', help: 'U.', buckets: BUCKETS, registers: [theirs] });
    new FastCounter({ name: 'pdlink_u_total', help: 'U.', registers: [ours] });
    new Counter({ name: 'pdlink_u_total', help: 'U.', registers: [theirs] });
    const fastLabelled = new FastCounter({ name: 'pdlink_v_total', help: 'V.', labelNames: ['r'], registers: [ours] });
    const slowLabelled = new Counter({ name: 'pdlink_v_total', help: 'V.', labelNames: ['r'], registers: [theirs] });
    fastLabelled.labels('bound-only');
    slowLabelled.labels('bound-only');
    fastLabelled.labels('zero').inc(0);
    slowLabelled.labels('zero').inc(0);
    new FastHistogram({ name: 'pdlink_w_seconds', help: 'W.', buckets: BUCKETS, labelNames: ['r'], registers: [ours] }).labels(
      'bound-only',
    );
    new Histogram({ name: 'pdlink_w_seconds', help: 'W.', buckets: BUCKETS, labelNames: ['r'], registers: [theirs] }).labels('bound-only');
    expect(await ours.metrics()).toBe(await theirs.metrics());
    ours.resetMetrics();
    theirs.resetMetrics();
    expect(await ours.metrics()).toBe(await theirs.metrics());
  });
});

describe('FastCounter', () => {
  test('is exposed exactly as prom-client exposes the same increments, and read by get() alike', async () => {
    const ours = new Registry();
    const theirs = new Registry();
    const fast = new FastCounter({ name: 'pdlink_c_total', help: 'C.', labelNames: ['api', 'outcome'], registers: [ours] });
    const slow = new Counter({ name: 'pdlink_c_total', help: 'C.', labelNames: ['api', 'outcome'], registers: [theirs] });
    const ok = fast.labels('chat', 'ok');
    for (let i = 0; i < 5; i++) {
      ok.inc();
      slow.labels('chat', 'ok').inc();
    }
    fast.labels('completions', 'timeout').inc(2);
    slow.labels('completions', 'timeout').inc(2);
    fast.labels('chat', 'invalid').inc(0);
    slow.labels('chat', 'invalid').inc(0);
    expect(await ours.metrics()).toBe(await theirs.metrics());
    expect((await ours.getSingleMetric('pdlink_c_total')!.get()).values).toEqual(
      (await theirs.getSingleMetric('pdlink_c_total')!.get()).values,
    );
  });

  test('a negative or non-finite increment is refused and changes nothing', async () => {
    const registry = new Registry();
    const c = new FastCounter({ name: 'pdlink_d_total', help: 'D.', registers: [registry] }).labels();
    c.inc();
    expect(() => c.inc(-1)).toThrow('pdlink_d_total: a counter cannot decrease (inc by -1)');
    expect(() => c.inc(Number.NaN)).toThrow('not a finite number');
    expect(await registry.metrics()).toContain('pdlink_d_total 1\n');
  });

  test('a name already registered is refused by the registry', () => {
    const registry = new Registry();
    new Counter({ name: 'pdlink_e_total', help: 'E.', registers: [registry] });
    expect(() => new FastCounter({ name: 'pdlink_e_total', help: 'E.', registers: [registry] })).toThrow('already been registered');
  });
});
