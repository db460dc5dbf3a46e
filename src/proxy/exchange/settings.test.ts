import { describe, expect, test } from 'bun:test';
import { PdlinkError } from '../../core/errors.ts';
import type { CoordinatorConfigFile } from '../../schema/coordinator-config.ts';
import { checkSettings, DEFAULT_BACKOFF_BASE_MS, resolveProxySettings } from './settings.ts';

function configError(fn: () => unknown): PdlinkError {
  try {
    fn();
  } catch (err) {
    if (err instanceof PdlinkError && err.code === 'config_invalid') return err;
    throw err;
  }
  throw new Error('expected config_invalid');
}

describe('resolveProxySettings', () => {
  test('MindIE defaults without a file', () => {
    const s = resolveProxySettings();
    expect(s.firstTokenTimeoutMs).toBe(600_000);
    expect(s.inferTimeoutMs).toBe(600_000);
    expect(s.prefillTimeoutMs).toBe(600_000);
    expect(s.maxRetries).toBe(5);
    expect(s.maxInFlight).toBe(10_000);
    expect(s.backoffBaseMs).toBe(DEFAULT_BACKOFF_BASE_MS);
  });

  test('reads exception_config and request_limit in seconds, counts and MB; 0 disables a timeout', () => {
    const s = resolveProxySettings({
      exception_config: { first_token_timeout: 5, infer_timeout: 0, max_retry: 2 },
      request_limit: { max_requests: 7, body_limit: 2 },
    });
    expect(s.firstTokenTimeoutMs).toBe(5_000);
    expect(s.prefillTimeoutMs).toBe(5_000);
    expect(s.inferTimeoutMs).toBe(Infinity);
    expect(s.maxRetries).toBe(2);
    expect(s.maxInFlight).toBe(7);
    expect(s.bodyLimitBytes).toBe(2 * 1024 * 1024);
  });

  test('http_config.http_timeout_seconds is the engine idle timeout of every leg; 0 disables it', () => {
    expect(resolveProxySettings().engineIdleTimeoutMs).toBe(600_000);
    expect(resolveProxySettings({ http_config: { http_timeout_seconds: 10 } }).engineIdleTimeoutMs).toBe(10_000);
    expect(resolveProxySettings({ http_config: { http_timeout_seconds: 0 } }).engineIdleTimeoutMs).toBe(Infinity);
    expect(configError(() => resolveProxySettings({}, { engineIdleTimeoutMs: -5 })).issues[0]?.path).toBe('engineIdleTimeoutMs');
  });

  test('pdlink’s own proxy_config in ms, then programmatic overrides', () => {
    const file = { proxy_config: { prefill_timeout_ms: 1500, backoff_base_ms: 10, backoff_cap_ms: 100, lease_ms: 5000 } };
    const s = resolveProxySettings(file, { backoffCapMs: 50 });
    expect(s.prefillTimeoutMs).toBe(1500);
    expect(s.backoffBaseMs).toBe(10);
    expect(s.backoffCapMs).toBe(50);
    expect(s.leaseMs).toBe(5000);
  });

  test('a bad proxy_config key is named with its section', () => {
    // A file object built by code, not read through the file schema, is checked all the same.
    const unchecked = { proxy_config: { backoff_base_ms: -1, lease_ms: 'x' } } as unknown as CoordinatorConfigFile;
    const err = configError(() => resolveProxySettings(unchecked));
    expect(err.issues.map((i) => i.path).sort()).toEqual(['proxy_config.backoff_base_ms', 'proxy_config.lease_ms']);
  });

  test('a bad override is named', () => {
    expect(configError(() => resolveProxySettings({}, { maxRetries: -1 })).issues[0]?.path).toBe('maxRetries');
    expect(configError(() => resolveProxySettings({}, { inferTimeoutMs: 0 })).issues[0]?.path).toBe('inferTimeoutMs');
    expect(configError(() => checkSettings({ ...resolveProxySettings(), leaseMs: Infinity })).issues[0]?.path).toBe('leaseMs');
  });
});
