import { expect, test } from 'bun:test';
import { Registry } from 'prom-client';
import { ProxyMetrics } from './metrics.ts';

test('requests_total counts by api and outcome through children bound once, also after a reset', async () => {
  const registry = new Registry();
  const metrics = new ProxyMetrics(registry);
  metrics.requestStarted();
  metrics.requestEnded('completions', 'ok');
  metrics.requestStarted();
  metrics.requestEnded('completions', 'ok');
  metrics.requestRefused('completions', 'rejected');
  metrics.requestStarted();
  metrics.requestEnded('chat_completions', 'ok');
  let text = await registry.metrics();
  expect(text).toContain('pdlink_pd_requests_total{api="completions",outcome="ok"} 2');
  expect(text).toContain('pdlink_pd_requests_total{api="completions",outcome="rejected"} 1');
  expect(text).toContain('pdlink_pd_requests_total{api="chat_completions",outcome="ok"} 1');
  expect(text).toContain('pdlink_pd_requests_in_flight 0');
  registry.resetMetrics();
  metrics.requestRefused('completions', 'rejected');
  text = await registry.metrics();
  expect(text).toContain('pdlink_pd_requests_total{api="completions",outcome="rejected"} 1');
  expect(text).not.toContain('outcome="ok"} 2');
});

test('in flight is read when scraped; durations go through children bound once, also after a reset', async () => {
  const registry = new Registry();
  const metrics = new ProxyMetrics(registry);
  metrics.requestStarted();
  metrics.requestStarted();
  metrics.prefill(0.003);
  metrics.transfer(0.02);
  metrics.decode(0.2);
  let text = await registry.metrics();
  expect(text).toContain('pdlink_pd_requests_in_flight 2');
  expect(text).toContain('pdlink_pd_prefill_duration_seconds_bucket{le="0.005"} 1');
  expect(text).toContain('pdlink_pd_kv_transfer_duration_seconds_sum 0.02');
  expect(text).toContain('pdlink_pd_decode_duration_seconds_count 1');
  metrics.requestEnded('completions', 'ok');
  registry.resetMetrics();
  metrics.prefill(0.5);
  text = await registry.metrics();
  expect(text).toContain('pdlink_pd_requests_in_flight 1');
  expect(text).toContain('pdlink_pd_prefill_duration_seconds_count 1');
  expect(text).toContain('pdlink_pd_prefill_duration_seconds_sum 0.5');
});
