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
