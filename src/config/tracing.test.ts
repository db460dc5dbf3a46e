import { afterAll, describe, expect, test } from 'bun:test';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ConfigError } from '../core/errors.ts';
import { resolveCoordinatorSettings } from './coordinator.ts';
import { resolveTracingSettings } from './tracing.ts';

const dir = mkdtempSync(join(tmpdir(), 'pdlink-tracing-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function settingsOf(file: unknown, env: Record<string, string> = {}) {
  const path = join(dir, `config-${Math.random().toString(36).slice(2)}.json`);
  writeFileSync(path, JSON.stringify(file));
  return resolveCoordinatorSettings({ config: path }, env, dir);
}

describe('resolveTracingSettings', () => {
  test('off when neither the file nor OTEL_EXPORTER_OTLP_ENDPOINT names an endpoint', () => {
    expect(resolveTracingSettings(undefined, {})).toBeUndefined();
    expect(resolveTracingSettings({}, { OTEL_EXPORTER_OTLP_ENDPOINT: '' })).toBeUndefined();
  });

  test('the file’s pdlink.tracing.otlp_endpoint wins over the environment', () => {
    expect(
      resolveTracingSettings(
        { otlp_endpoint: 'http://127.0.0.1:4318', service_name: 'edge' },
        { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.2:4318' },
      ),
    ).toEqual({ endpoint: 'http://127.0.0.1:4318', serviceName: 'edge' });
  });

  test('the environment turns tracing on when the file is silent', () => {
    expect(resolveTracingSettings(undefined, { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.2:4318' })).toEqual({
      endpoint: 'http://127.0.0.2:4318',
      serviceName: 'pdlink-coordinator',
    });
  });

  test('a bad OTEL_EXPORTER_OTLP_ENDPOINT is a ConfigError naming the variable', () => {
    const bad = () => resolveTracingSettings(undefined, { OTEL_EXPORTER_OTLP_ENDPOINT: 'collector:4318' });
    expect(bad).toThrow(ConfigError);
    expect(bad).toThrow(/^env OTEL_EXPORTER_OTLP_ENDPOINT: must be an http\(s\) URL/);
  });
});

describe('pdlink.tracing in ms_coordinator.json', () => {
  test('the Coordinator reads the section, beside the shared pdlink keys', () => {
    const s = settingsOf({ pdlink: { cluster: 'c1', tracing: { otlp_endpoint: 'https://otel.example:4318' } } });
    expect(s.tracing).toEqual({ endpoint: 'https://otel.example:4318', serviceName: 'pdlink-coordinator' });
    expect(settingsOf({}).tracing).toBeUndefined();
  });

  test.each([
    [{ otlp_endpoint: 'collector:4318' }, 'pdlink.tracing.otlp_endpoint'],
    [{ otlp_endpoint: 4318 }, 'pdlink.tracing.otlp_endpoint'],
    [{ service_name: '' }, 'pdlink.tracing.service_name'],
    [{ sampler: 'always' }, 'pdlink.tracing.sampler'],
  ])('%j is refused naming %s', (tracing, field) => {
    let caught: unknown;
    try {
      settingsOf({ pdlink: { tracing } });
    } catch (err) {
      caught = err;
    }
    expect(caught).toBeInstanceOf(ConfigError);
    expect((caught as Error).message).toContain(field);
  });
});
