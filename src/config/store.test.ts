import { afterAll, describe, expect, test } from 'bun:test';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ConfigError } from '../core/errors.ts';
import { resolveCoordinatorSettings } from './coordinator.ts';
import { resolveStoreSettings } from './store.ts';

const dir = mkdtempSync(join(tmpdir(), 'pdlink-store-config-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
let count = 0;
function coordinatorWith(content: unknown, env: Record<string, string> = {}) {
  const path = join(dir, `c-${++count}.json`);
  writeFileSync(path, JSON.stringify(content));
  return resolveCoordinatorSettings({ config: path }, env, dir);
}
function errorOf(fn: () => unknown): Error {
  try {
    fn();
  } catch (err) {
    return err as Error;
  }
  throw new Error('no error');
}

describe('store settings', () => {
  test('absent everywhere: memory (undefined), the embedded default', () => {
    expect(resolveStoreSettings(undefined, {})).toBeUndefined();
    expect(coordinatorWith({}).ha).toBeUndefined();
  });

  test('the file wins over the env; cluster and lease TTL default to "default" and 2 s', () => {
    const env = { PDLINK_ETCD_ENDPOINTS: 'http://127.0.0.1:1,http://127.0.0.1:2', PDLINK_CLUSTER: 'from-env' };
    expect(resolveStoreSettings(undefined, env)).toEqual({
      endpoints: ['http://127.0.0.1:1', 'http://127.0.0.1:2'],
      cluster: 'from-env',
      leaseTtlSeconds: 2,
      compactionSeconds: 300,
    });
    expect(
      resolveStoreSettings(
        { cluster: 'east', store: { etcd: { endpoints: ['http://10.0.0.9:2379'], lease_ttl_seconds: 10, compaction_seconds: 0 } } },
        env,
      ),
    ).toEqual({
      endpoints: ['http://10.0.0.9:2379'],
      cluster: 'east',
      leaseTtlSeconds: 10,
      compactionSeconds: 0,
    });
  });

  test('bad env values are errors naming the variable', () => {
    expect(errorOf(() => resolveStoreSettings(undefined, { PDLINK_ETCD_ENDPOINTS: 'not a url' })).message).toContain(
      'PDLINK_ETCD_ENDPOINTS',
    );
    expect(
      errorOf(() => resolveStoreSettings(undefined, { PDLINK_ETCD_ENDPOINTS: 'http://127.0.0.1:2379', PDLINK_CLUSTER: 'a/b' })).message,
    ).toContain('PDLINK_CLUSTER');
  });

  test('Coordinator: etcd alone is active/active; backup_config.function_enable is master/standby', () => {
    const pdlink = { store: { etcd: { endpoints: ['http://127.0.0.1:2379'] } } };
    expect(coordinatorWith({ pdlink }).ha?.mode).toBe('active_active');
    expect(coordinatorWith({ pdlink, backup_config: { function_enable: true } }).ha?.mode).toBe('master_standby');
    expect(coordinatorWith({}, { PDLINK_ETCD_ENDPOINTS: 'http://127.0.0.1:2379' }).ha?.mode).toBe('active_active');
  });

  test("Coordinator: MindIE's database_server_dns names the etcd only when the function is on", () => {
    const backup = { database_server_dns: 'etcd.local', database_server_port: 2380 };
    expect(coordinatorWith({ backup_config: { ...backup, function_enable: false } }).ha).toBeUndefined();
    expect(coordinatorWith({ backup_config: { ...backup, function_enable: true } }).ha?.store.endpoints).toEqual([
      'http://etcd.local:2380',
    ]);
    expect(coordinatorWith({ backup_config: { database_server_dns: 'etcd.local', function_enable: true } }).ha?.store.endpoints).toEqual([
      'http://etcd.local:2379',
    ]);
  });

  test('Coordinator: master/standby without any etcd, or a bad pdlink section, is an error naming the key', () => {
    const noEtcd = errorOf(() => coordinatorWith({ backup_config: { function_enable: true } }));
    expect(noEtcd).toBeInstanceOf(ConfigError);
    expect(noEtcd.message).toContain('backup_config.function_enable');
    const badUrl = errorOf(() => coordinatorWith({ pdlink: { store: { etcd: { endpoints: ['nope'] } } } }));
    expect(badUrl).toBeInstanceOf(ConfigError);
    expect(badUrl.message).toContain('pdlink.store.etcd.endpoints');
    const badTtl = errorOf(() =>
      coordinatorWith({ pdlink: { store: { etcd: { endpoints: ['http://127.0.0.1:2379'], lease_ttl_seconds: 0 } } } }),
    );
    expect(badTtl.message).toContain('lease_ttl_seconds');
    const badCompaction = errorOf(() =>
      coordinatorWith({ pdlink: { store: { etcd: { endpoints: ['http://127.0.0.1:2379'], compaction_seconds: -1 } } } }),
    );
    expect(badCompaction.message).toContain('pdlink.store.etcd.compaction_seconds');
    const badEnv = errorOf(() => coordinatorWith({}, { PDLINK_ETCD_ENDPOINTS: 'nope' }));
    expect(badEnv).toBeInstanceOf(ConfigError);
    expect(badEnv.message).toContain('PDLINK_ETCD_ENDPOINTS');
  });
});
