import { afterAll, describe, expect, test } from 'bun:test';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ConfigError } from '../core/errors.ts';
import { CONFIG_PATH_ENV, resolveCoordinatorSettings } from './coordinator.ts';

const dir = mkdtempSync(join(tmpdir(), 'pdlink-config-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

let fileCount = 0;
function writeConfig(content: unknown): string {
  const path = join(dir, `config-${++fileCount}.json`);
  writeFileSync(path, typeof content === 'string' ? content : JSON.stringify(content));
  return path;
}

function emptyDir(): string {
  return mkdtempSync(join(dir, 'cwd-'));
}

function expectConfigError(fn: () => unknown, ...fragments: string[]): void {
  let caught: unknown;
  try {
    fn();
  } catch (err) {
    caught = err;
  }
  expect(caught).toBeInstanceOf(ConfigError);
  for (const fragment of fragments) expect((caught as Error).message).toContain(fragment);
}

describe('coordinator settings precedence', () => {
  test('embedded defaults when no argument, no env and no local file', () => {
    const s = resolveCoordinatorSettings({}, {}, emptyDir());
    expect(s.source).toBe('defaults');
    expect(s.manage).toEqual({ ip: '127.0.0.1', port: 1026 });
    expect(s.predict).toEqual({ ip: '127.0.0.1', port: 1025 });
    expect(s.bodyLimitBytes).toBe(8 * 1024 * 1024);
  });

  test('the MindIE layout is read: http_config ports as strings, request_limit.body_limit in MB', () => {
    const path = writeConfig({
      http_config: {
        manage_ip: '127.0.0.5',
        manage_port: '2026',
        predict_ip: '127.0.0.6',
        predict_port: '2025',
        status_port: '1029',
        server_name: 'x',
      },
      request_limit: { body_limit: 3, max_requests: 500 },
      backup_config: { function_enable: false },
    });
    const s = resolveCoordinatorSettings({ config: path }, {}, emptyDir());
    expect(s.source).toBe(path);
    expect(s.manage).toEqual({ ip: '127.0.0.5', port: 2026 });
    expect(s.predict).toEqual({ ip: '127.0.0.6', port: 2025 });
    expect(s.bodyLimitBytes).toBe(3 * 1024 * 1024);
    expect(s.maxRequests).toBe(500);
  });

  test('a command-line argument wins over the file', () => {
    const path = writeConfig({ http_config: { manage_ip: '127.0.0.5', manage_port: '2026' } });
    const s = resolveCoordinatorSettings({ config: path, manageIp: '127.0.0.9', managePort: 0 }, {}, emptyDir());
    expect(s.manage).toEqual({ ip: '127.0.0.9', port: 0 });
  });

  test('the file wins over the defaults key by key', () => {
    const path = writeConfig({ http_config: { manage_port: '3026' } });
    const s = resolveCoordinatorSettings({ config: path }, {}, emptyDir());
    expect(s.manage).toEqual({ ip: '127.0.0.1', port: 3026 });
  });

  test(`the path comes from ${CONFIG_PATH_ENV} when --config is absent`, () => {
    const path = writeConfig({ http_config: { manage_port: '4026' } });
    const s = resolveCoordinatorSettings({}, { [CONFIG_PATH_ENV]: path }, emptyDir());
    expect(s.source).toBe(path);
    expect(s.manage.port).toBe(4026);
  });

  test('--config wins over the env variable', () => {
    const fromEnv = writeConfig({ http_config: { manage_port: '4026' } });
    const fromArg = writeConfig({ http_config: { manage_port: '5026' } });
    const s = resolveCoordinatorSettings({ config: fromArg }, { [CONFIG_PATH_ENV]: fromEnv }, emptyDir());
    expect(s.manage.port).toBe(5026);
  });

  test('./ms_coordinator.json is used when present and nothing else names a file', () => {
    const cwd = emptyDir();
    writeFileSync(join(cwd, 'ms_coordinator.json'), JSON.stringify({ http_config: { predict_port: '6025' } }));
    const s = resolveCoordinatorSettings({}, {}, cwd);
    expect(s.source).toBe(join(cwd, 'ms_coordinator.json'));
    expect(s.predict.port).toBe(6025);
  });
});

describe('coordinator settings validation', () => {
  test.each([
    ['1023', false],
    ['1024', true],
    ['65535', true],
    ['65536', false],
  ])('file port %s accepted: %p', (port, ok) => {
    const path = writeConfig({ http_config: { manage_port: port } });
    const run = () => resolveCoordinatorSettings({ config: path }, {}, emptyDir());
    if (ok) expect(run().manage.port).toBe(Number(port));
    else expectConfigError(run, 'http_config.manage_port', '[1024, 65535]');
  });

  test('0.0.0.0 is refused unless allow_all_zero_ip_listening is true', () => {
    const refused = writeConfig({ http_config: { manage_ip: '0.0.0.0' } });
    expectConfigError(() => resolveCoordinatorSettings({ config: refused }, {}, emptyDir()), 'manage_ip', 'allow_all_zero_ip_listening');
    expectConfigError(() => resolveCoordinatorSettings({ predictIp: '::' }, {}, emptyDir()), 'predict_ip');
    const allowed = writeConfig({ http_config: { manage_ip: '0.0.0.0', allow_all_zero_ip_listening: true } });
    expect(resolveCoordinatorSettings({ config: allowed }, {}, emptyDir()).manage.ip).toBe('0.0.0.0');
  });

  test.each(['::ffff:0.0.0.0', '::ffff:0:0', '0:0:0:0:0:0:0:0', '::0', '0::', '::0.0.0.0', '0000::'])(
    'every spelling of all interfaces is refused too: %p',
    (ip) => {
      const refused = writeConfig({ http_config: { predict_ip: ip } });
      expectConfigError(() => resolveCoordinatorSettings({ config: refused }, {}, emptyDir()), 'predict_ip', 'allow_all_zero_ip_listening');
      expectConfigError(() => resolveCoordinatorSettings({ manageIp: ip }, {}, emptyDir()), 'manage_ip');
      const allowed = writeConfig({ http_config: { predict_ip: ip, allow_all_zero_ip_listening: true } });
      expect(resolveCoordinatorSettings({ config: allowed }, {}, emptyDir()).predict.ip).toBe(ip);
    },
  );

  test('a bad file names the key and the reason', () => {
    const path = writeConfig({ http_config: { manage_ip: 'not-an-ip', manage_port: 'abc' }, request_limit: { body_limit: 21 } });
    expectConfigError(
      () => resolveCoordinatorSettings({ config: path }, {}, emptyDir()),
      path,
      'http_config.manage_ip',
      'http_config.manage_port',
      'request_limit.body_limit',
    );
  });

  test('malformed JSON, an empty file and a missing file are errors naming the file', () => {
    const malformed = writeConfig('{"http_config": ');
    expectConfigError(() => resolveCoordinatorSettings({ config: malformed }, {}, emptyDir()), malformed, 'not valid JSON');
    const empty = writeConfig('');
    expectConfigError(() => resolveCoordinatorSettings({ config: empty }, {}, emptyDir()), empty, 'size');
    const missing = join(dir, 'missing.json');
    expectConfigError(() => resolveCoordinatorSettings({ config: missing }, {}, emptyDir()), missing, 'cannot read');
  });

  test("scheduler policy: pdlink's own key, else MindIE's algorithm_type for prefill, else cache_affinity (load_balance for decode)", () => {
    expect(resolveCoordinatorSettings({}, {}, emptyDir()).policy).toEqual({ prefill: 'cache_affinity', decode: 'load_balance' });
    const mindie = writeConfig({ digs_scheduler_config: { deploy_mode: 'pd_separate', algorithm_type: 'round_robin' } });
    expect(resolveCoordinatorSettings({ config: mindie }, {}, emptyDir()).policy).toEqual({
      prefill: 'round_robin',
      decode: 'load_balance',
    });
    const own = writeConfig({
      digs_scheduler_config: { algorithm_type: 'round_robin' },
      scheduler: { policy: { prefill: 'cache_affinity', decode: 'power_of_two' } },
    });
    expect(resolveCoordinatorSettings({ config: own }, {}, emptyDir()).policy).toEqual({
      prefill: 'cache_affinity',
      decode: 'power_of_two',
    });
    const prefillOnly = writeConfig({ scheduler: { policy: { decode: 'cache_affinity' } } });
    expectConfigError(
      () => resolveCoordinatorSettings({ config: prefillOnly }, {}, emptyDir()),
      'scheduler.policy.decode',
      'cache_affinity applies to prefill only',
      'use one of load_balance, round_robin, power_of_two',
    );
    const unknown = writeConfig({ scheduler: { policy: { prefill: 'fastest' } } });
    expectConfigError(
      () => resolveCoordinatorSettings({ config: unknown }, {}, emptyDir()),
      'scheduler.policy.prefill',
      'must be one of load_balance',
    );
    const misspelt = writeConfig({ scheduler: { policy: { prefill: 'Round-Robin' } } });
    expectConfigError(
      () => resolveCoordinatorSettings({ config: misspelt }, {}, emptyDir()),
      'scheduler.policy.prefill',
      'must be a policy name',
    );
  });

  test('proxy settings come from exception_config and request_limit; a bad proxy_config key is named', () => {
    const path = writeConfig({ exception_config: { max_retry: 2, first_token_timeout: 30 }, request_limit: { max_requests: 64 } });
    const s = resolveCoordinatorSettings({ config: path }, {}, emptyDir());
    expect(s.proxy.maxRetries).toBe(2);
    expect(s.proxy.firstTokenTimeoutMs).toBe(30000);
    expect(s.proxy.maxInFlight).toBe(64);
    const bad = writeConfig({ proxy_config: { backoff_base_ms: -1 } });
    expectConfigError(() => resolveCoordinatorSettings({ config: bad }, {}, emptyDir()), 'proxy_config.backoff_base_ms');
  });

  test('circuit cool-down (scheduler.circuit_breaker.cooldown_ms), per-instance cap and engine idle timeout from the file', () => {
    const defaults = resolveCoordinatorSettings({}, {}, emptyDir());
    expect([defaults.circuitCooldownMs, defaults.singleNodeMaxRequests, defaults.proxy.engineIdleTimeoutMs]).toEqual([
      30_000, 1000, 600_000,
    ]);
    const path = writeConfig({
      scheduler: { circuit_breaker: { cooldown_ms: 2_000 } },
      request_limit: { single_node_max_requests: 8 },
      http_config: { http_timeout_seconds: 0 },
    });
    const s = resolveCoordinatorSettings({ config: path }, {}, emptyDir());
    expect([s.circuitCooldownMs, s.singleNodeMaxRequests, s.proxy.engineIdleTimeoutMs]).toEqual([2_000, 8, Infinity]);
    const bad = writeConfig({ scheduler: { circuit_breaker: { cooldown_ms: 0 } } });
    expectConfigError(() => resolveCoordinatorSettings({ config: bad }, {}, emptyDir()), 'scheduler.circuit_breaker.cooldown_ms');
  });

  test('conditional disaggregation (scheduler.conditional_disaggregation): off by default, each limit from the file', () => {
    expect(resolveCoordinatorSettings({}, {}, emptyDir()).localPrefill).toEqual({});
    const path = writeConfig({ scheduler: { conditional_disaggregation: { max_local_prefill_length: 256, max_prefill_queue_size: 8 } } });
    expect(resolveCoordinatorSettings({ config: path }, {}, emptyDir()).localPrefill).toEqual({
      maxLocalPrefillLength: 256,
      maxPrefillQueueSize: 8,
    });
    const one = writeConfig({ scheduler: { conditional_disaggregation: { max_prefill_queue_size: 0 } } });
    expect(resolveCoordinatorSettings({ config: one }, {}, emptyDir()).localPrefill).toEqual({ maxPrefillQueueSize: 0 });
    const bad = writeConfig({ scheduler: { conditional_disaggregation: { max_local_prefill_length: -1 } } });
    expectConfigError(
      () => resolveCoordinatorSettings({ config: bad }, {}, emptyDir()),
      'scheduler.conditional_disaggregation.max_local_prefill_length',
    );
  });

  test('TLS enabled without certificate paths is an error naming the key', () => {
    const path = writeConfig({ tls_config: { controller_server_tls_enable: true } });
    expectConfigError(() => resolveCoordinatorSettings({ config: path }, {}, emptyDir()), 'controller_server_tls_items');
  });
});

describe('coordinator security settings', () => {
  test('off by default: no token, no keys, client Authorization forwarded, no list, default cap, no rate limit', () => {
    const { security } = resolveCoordinatorSettings({}, {}, emptyDir());
    expect(security).toEqual({ forwardAuthorization: true, maxConnections: 4096 });
  });

  test('the pdlink section: token and keys from their files, forwarding off with keys unless asked, list, cap, rate limit', () => {
    const token = writeConfig('tok-abc\n');
    const keys = writeConfig('# keys\nk1\nk2\n');
    const path = writeConfig({
      pdlink: {
        auth: { management_token_file: token, api_keys_file: keys },
        allowed_instance_networks: ['10.0.0.0/8'],
        http: { max_connections: 64 },
        rate_limit: { requests_per_second: 2.5 },
      },
    });
    const { security } = resolveCoordinatorSettings({ config: path }, {}, emptyDir());
    expect(security).toEqual({
      managementToken: 'tok-abc',
      apiKeys: ['k1', 'k2'],
      forwardAuthorization: false,
      allowedNetworks: ['10.0.0.0/8'],
      maxConnections: 64,
      rateLimit: { ratePerSecond: 2.5, burst: 3 },
    });
    const forwarding = writeConfig({ pdlink: { auth: { api_keys_file: keys }, proxy: { forward_authorization: true } } });
    expect(resolveCoordinatorSettings({ config: forwarding }, {}, emptyDir()).security.forwardAuthorization).toBe(true);
  });

  test('bad values and unreadable secret files are ConfigErrors naming the key, never the secret', () => {
    expectConfigError(
      () =>
        resolveCoordinatorSettings(
          { config: writeConfig({ pdlink: { allowed_instance_networks: ['10.0.0.0/33', 'host/8'] } }) },
          {},
          emptyDir(),
        ),
      'pdlink.allowed_instance_networks[0]',
      'pdlink.allowed_instance_networks[1]',
    );
    expectConfigError(
      () => resolveCoordinatorSettings({ config: writeConfig({ pdlink: { rate_limit: { requests_per_second: 0 } } }) }, {}, emptyDir()),
      'pdlink.rate_limit.requests_per_second',
    );
    expectConfigError(
      () => resolveCoordinatorSettings({ config: writeConfig({ pdlink: { auth: { api_keys_file: join(dir, 'none') } } }) }, {}, emptyDir()),
      'pdlink.auth.api_keys_file: cannot read',
    );
    expectConfigError(
      () => resolveCoordinatorSettings({}, { PDLINK_MANAGEMENT_TOKEN_FILE: writeConfig('') }, emptyDir()),
      'PDLINK_MANAGEMENT_TOKEN_FILE',
      'is empty',
    );
  });
});

describe('pdlink.admission', () => {
  test('kept as checked; absent is empty (admission’s defaults)', () => {
    const section = { classes: [{ name: 'gold', queue_timeout_ms: 100 }, { name: 'rest' }], tenants: { vip: { class: 'gold' } } };
    const settings = resolveCoordinatorSettings({ config: writeConfig({ pdlink: { admission: section } }) }, {}, emptyDir());
    expect(settings.admission).toEqual(section);
    expect(resolveCoordinatorSettings({}, {}, emptyDir()).admission).toEqual({});
  });

  test('a wrong key stops the start naming its path', () => {
    expectConfigError(
      () =>
        resolveCoordinatorSettings(
          { config: writeConfig({ pdlink: { admission: { tenants: { vip: { class: 'gold' } }, max_queued_bytes: -5 } } }) },
          {},
          emptyDir(),
        ),
      'pdlink.admission.tenants.vip.class',
      'pdlink.admission.max_queued_bytes',
    );
  });

  test('named API keys give their tenants', () => {
    const keys = writeConfig('chat-app sk-1\nsk-2\n');
    const settings = resolveCoordinatorSettings({ config: writeConfig({ pdlink: { auth: { api_keys_file: keys } } }) }, {}, emptyDir());
    expect(settings.security.apiKeys).toEqual(['sk-1', 'sk-2']);
    expect([...settings.security.apiKeyTenants!]).toEqual([['sk-1', 'chat-app']]);
  });
});
