import { describe, expect, test } from 'bun:test';
import { PdlinkError } from '../core/errors.ts';
import { identify } from './identity.ts';
import { resolveAdmissionSettings } from './settings.ts';

function issuesOf(section: unknown): { path: string; message: string }[] {
  try {
    resolveAdmissionSettings(section);
  } catch (err) {
    expect(err).toBeInstanceOf(PdlinkError);
    expect((err as PdlinkError).code).toBe('config_invalid');
    return [...(err as PdlinkError).issues];
  }
  throw new Error('accepted');
}

describe('resolveAdmissionSettings', () => {
  test('defaults: on, interactive above batch, no stage limits, preemption off', () => {
    const s = resolveAdmissionSettings();
    expect(s.enabled).toBe(true);
    expect(s.classes.map((c) => [c.name, c.queueTimeoutMs])).toEqual([
      ['interactive', 10_000],
      ['batch', 60_000],
    ]);
    expect(s.defaultTenant).toEqual({ weight: 1, classIndex: 0, maxClassIndex: 0 });
    expect(s).toMatchObject({
      tenantHeader: 'x-pdlink-tenant',
      classHeader: 'x-pdlink-priority',
      maxQueued: 1024,
      maxQueuedBytes: 64 << 20,
      preemption: false,
      retryAfterSeconds: 1,
      stages: {},
    });
  });

  test('a full section resolves to indices and limits', () => {
    const s = resolveAdmissionSettings({
      classes: [{ name: 'gold', queue_timeout_ms: 100 }, { name: 'silver' }, { name: 'bronze', queue_timeout_ms: 0 }],
      default_class: 'silver',
      tenants: { nightly: { class: 'bronze', weight: 0.5 }, vip: { class: 'silver', max_class: 'gold', weight: 4 } },
      prefill: { max_in_flight_per_instance: 2, max_queued_tokens_per_instance: 8192 },
      decode: { max_in_flight_per_instance: 64, max_kv_usage: 0.9 },
      preemption: true,
    });
    expect(s.classes.map((c) => c.queueTimeoutMs)).toEqual([100, 30_000, 0]);
    expect(s.defaultTenant.classIndex).toBe(1);
    expect(s.tenants.get('nightly')).toEqual({ weight: 0.5, classIndex: 2, maxClassIndex: 2 });
    expect(s.tenants.get('vip')).toEqual({ weight: 4, classIndex: 1, maxClassIndex: 0 });
    expect(s.stages).toEqual({ prefillInFlight: 2, prefillQueuedTokens: 8192, decodeInFlight: 64, decodeKvUsage: 0.9 });
  });

  test('every wrong key is refused with its path', () => {
    expect(issuesOf({ max_queued: -1 })).toEqual([{ path: 'pdlink.admission.max_queued', message: 'must be in [0, 1000000]' }]);
    expect(issuesOf({ default_class: 'gold' })[0]).toMatchObject({ path: 'pdlink.admission.default_class' });
    expect(issuesOf({ tenants: { a: { class: 'nope' } } })[0]).toMatchObject({
      path: 'pdlink.admission.tenants.a.class',
      message: 'must be one of the classes (interactive, batch)',
    });
    expect(issuesOf({ tenants: { a: { class: 'interactive', max_class: 'batch' } } })[0]?.path).toBe(
      'pdlink.admission.tenants.a.max_class',
    );
    expect(issuesOf({ classes: [{ name: 'a' }, { name: 'a' }] })[0]?.path).toBe('pdlink.admission.classes[1].name');
    expect(issuesOf({ classes: [] })[0]?.path).toBe('pdlink.admission.classes');
    expect(issuesOf({ decode: { max_kv_usage: 2 } })[0]?.path).toBe('pdlink.admission.decode.max_kv_usage');
    expect(issuesOf({ tenant_header: 'X Tenant' })[0]?.path).toBe('pdlink.admission.tenant_header');
    expect(issuesOf({ tenants: { 'bad name': {} } })[0]?.path).toContain('pdlink.admission.tenants');
    expect(issuesOf({ surprise: 1 })[0]?.path).toBe('pdlink.admission.surprise');
    expect(issuesOf([])[0]).toMatchObject({ path: 'pdlink.admission', message: 'must be a JSON object' });
  });
});

describe('identify', () => {
  const settings = resolveAdmissionSettings({
    tenants: { nightly: { class: 'batch' }, vip: { class: 'batch', max_class: 'interactive', weight: 3 } },
  });
  const headers = (h: Record<string, string>) => (name: string) => h[name] ?? null;

  test('the tenant: the gateway, else the key, else the header, else the address', () => {
    expect(identify(settings, { supplied: { tenant: 'gw' }, keyTenant: 'k', header: headers({ 'x-pdlink-tenant': 'h' }) })).toMatchObject({
      tenant: 'gw',
    });
    expect(identify(settings, { keyTenant: 'k', header: headers({ 'x-pdlink-tenant': 'h' }), address: () => '1.2.3.4' })).toMatchObject({
      tenant: 'k',
    });
    expect(identify(settings, { header: headers({ 'x-pdlink-tenant': 'h' }), address: () => '1.2.3.4' })).toMatchObject({ tenant: 'h' });
    expect(identify(settings, { header: headers({}), address: () => '1.2.3.4' })).toMatchObject({ tenant: 'ip:1.2.3.4', classIndex: 0 });
    expect(identify(settings, { header: headers({}) })).toMatchObject({ tenant: 'unknown' });
  });

  test('the class: the tenant’s own, lowered freely by the header, raised only up to its bound', () => {
    expect(identify(settings, { header: headers({ 'x-pdlink-tenant': 'nightly' }) })).toMatchObject({ classIndex: 1 });
    expect(identify(settings, { header: headers({ 'x-pdlink-tenant': 'nightly', 'x-pdlink-priority': 'interactive' }) })).toMatchObject({
      classIndex: 1,
    });
    expect(identify(settings, { header: headers({ 'x-pdlink-tenant': 'vip', 'x-pdlink-priority': 'interactive' }) })).toMatchObject({
      classIndex: 0,
      policy: { weight: 3 },
    });
    expect(identify(settings, { header: headers({ 'x-pdlink-priority': 'batch' }) })).toMatchObject({ classIndex: 1 });
    // The gateway's word is trusted.
    expect(identify(settings, { supplied: { tenant: 'nightly', priority: 'interactive' }, header: headers({}) })).toMatchObject({
      classIndex: 0,
    });
  });

  test('bad headers: 400 naming the header; a gateway naming no class: a configuration error', () => {
    const bad = identify(settings, { header: headers({ 'x-pdlink-priority': 'urgent' }) }) as PdlinkError;
    expect(bad).toBeInstanceOf(PdlinkError);
    expect(bad.status).toBe(400);
    expect(bad.issues[0]).toEqual({ path: 'x-pdlink-priority', message: 'must be one of interactive, batch' });
    const tenant = identify(settings, { header: headers({ 'x-pdlink-tenant': 'has space' }) }) as PdlinkError;
    expect(tenant.issues[0]?.path).toBe('x-pdlink-tenant');
    const gateway = identify(settings, { supplied: { priority: 'nope' }, header: headers({}) }) as PdlinkError;
    expect(gateway.status).toBe(500);
  });
});
