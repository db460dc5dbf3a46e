import { describe, expect, test } from 'bun:test';
import { createCoordinator } from './coordinator.ts';

/** A completion request as a client sends it (no instance is registered: admission answers 503 itself). */
const completion = (headers: Record<string, string> = {}) =>
  new Request('http://127.0.0.1:1025/v1/completions', {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify({ model: 'm', prompt: 'p' }),
  });

/** The value of one series of the Coordinator's registry, 0 when absent. */
async function series(coordinator: ReturnType<typeof createCoordinator>, name: string, labels: Record<string, string>): Promise<number> {
  const values = (await coordinator.metrics.getSingleMetric(name)?.get())?.values ?? [];
  return values.find((v) => Object.entries(labels).every(([k, want]) => String(v.labels[k]) === want))?.value ?? 0;
}

describe('admission in the Coordinator', () => {
  test('on by default; nothing registered: 503 at once with Retry-After, counted against the tenant', async () => {
    const coordinator = createCoordinator();
    try {
      expect(coordinator.admission).toBeDefined();
      const res = await coordinator.inferenceFetch(completion({ 'x-pdlink-tenant': 'acme', 'x-pdlink-priority': 'batch' }));
      expect(res.status).toBe(503);
      expect(res.headers.get('retry-after')).toBe('1');
      expect(((await res.json()) as { error: { code: string } }).error.code).toBe('unavailable');
      expect(await series(coordinator, 'pdlink_admission_shed_total', { class: 'batch', tenant: 'acme', reason: 'unavailable' })).toBe(1);
    } finally {
      await coordinator.close();
    }
  });

  test('the gateway’s identify hook names the tenant and the class, over the headers', async () => {
    const seen: Request[] = [];
    const coordinator = createCoordinator({
      identify: (request) => {
        seen.push(request);
        return { tenant: 'gateway-team', priority: 'batch' };
      },
    });
    try {
      await coordinator.inferenceFetch(completion({ 'x-pdlink-tenant': 'claimed', 'x-pdlink-priority': 'interactive' }));
      expect(seen).toHaveLength(1);
      expect(await series(coordinator, 'pdlink_admission_shed_total', { class: 'batch', tenant: 'gateway-team' })).toBe(1);
      expect(await series(coordinator, 'pdlink_admission_shed_total', { tenant: 'claimed' })).toBe(0);
    } finally {
      await coordinator.close();
    }
  });

  test('with API keys, the key’s tenant counts (a named key by its name, another by a digest); the tenant header is ignored', async () => {
    const coordinator = createCoordinator({
      apiKeys: ['sk-named', 'sk-plain'],
      apiKeyTenants: new Map([['sk-named', 'chat-app']]),
      admission: { tenants: { 'chat-app': { class: 'batch' } } },
    });
    try {
      await coordinator.inferenceFetch(completion({ authorization: 'Bearer sk-named', 'x-pdlink-tenant': 'other' }));
      await coordinator.inferenceFetch(completion({ authorization: 'Bearer sk-plain' }));
      expect(await series(coordinator, 'pdlink_admission_shed_total', { class: 'batch', tenant: 'chat-app' })).toBe(1);
      const values = (await coordinator.metrics.getSingleMetric('pdlink_admission_shed_total')!.get()).values;
      const plain = values.find((v) => String(v.labels['tenant']).startsWith('key-'));
      expect(plain?.labels['tenant']).toMatch(/^key-[0-9a-f]{8}$/);
      expect(values.some((v) => String(v.labels['tenant']).includes('sk-'))).toBe(false);
    } finally {
      await coordinator.close();
    }
  });

  test('a wrong key of the programmatic section is refused with its path; off keeps the instant answers', async () => {
    expect(() => createCoordinator({ admission: { max_queued: -1 } })).toThrow('admission.max_queued');
    const coordinator = createCoordinator({ admission: { enabled: false } });
    try {
      expect(coordinator.admission).toBeUndefined();
      const res = await coordinator.inferenceFetch(completion());
      expect(res.status).toBe(503);
      expect(res.headers.get('retry-after')).toBeNull();
    } finally {
      await coordinator.close();
    }
  });

  test('a bad class header is 400 naming it', async () => {
    const coordinator = createCoordinator();
    try {
      const res = await coordinator.inferenceFetch(completion({ 'x-pdlink-priority': 'urgent' }));
      expect(res.status).toBe(400);
      expect(((await res.json()) as { error: { param: string } }).error.param).toBe('x-pdlink-priority');
    } finally {
      await coordinator.close();
    }
  });
});
