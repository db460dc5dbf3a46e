import { afterAll, describe, expect, test } from 'bun:test';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ConfigError } from '../core/errors.ts';
import { resolveProxySettings } from '../proxy/exchange/settings.ts';
import { resolveCoordinatorSettings } from './coordinator.ts';

const dir = mkdtempSync(join(tmpdir(), 'pdlink-protocol-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function settingsOf(file: unknown) {
  const path = join(dir, `c-${Math.random().toString(36).slice(2)}.json`);
  writeFileSync(path, JSON.stringify(file));
  return resolveCoordinatorSettings({ config: path }, {}, dir);
}

function errorOf(fn: () => unknown): Error {
  try {
    fn();
  } catch (err) {
    return err as Error;
  }
  throw new Error('nothing was thrown');
}

describe('pdlink.proxy in the Coordinator file', () => {
  test('vLLM by default, SGLang with its default bootstrap port when asked', () => {
    expect(resolveProxySettings({}).protocol).toBe('vllm');
    const sglang = resolveProxySettings({ pdlink: { proxy: { protocol: 'sglang' } } });
    expect(sglang.protocol).toBe('sglang');
    expect(sglang.bootstrapPort).toBe(8998);
    expect(resolveProxySettings({ pdlink: { proxy: { protocol: 'sglang', bootstrap_port: 9100 } } }).bootstrapPort).toBe(9100);
  });

  test('read from the file by the Coordinator', () => {
    expect(settingsOf({ pdlink: { proxy: { protocol: 'sglang', bootstrap_port: 9001 } } }).proxy).toMatchObject({
      protocol: 'sglang',
      bootstrapPort: 9001,
    });
  });

  test('an unknown protocol, a bad port or an unknown key is refused naming the field', () => {
    const protocol = errorOf(() => settingsOf({ pdlink: { proxy: { protocol: 'trtllm' } } }));
    expect(protocol).toBeInstanceOf(ConfigError);
    expect(protocol.message).toContain('pdlink.proxy.protocol');
    expect(errorOf(() => settingsOf({ pdlink: { proxy: { bootstrap_port: 70000 } } })).message).toContain('pdlink.proxy.bootstrap_port');
    expect(errorOf(() => settingsOf({ pdlink: { proxy: { boostrap_port: 1 } } })).message).toContain('boostrap_port');
  });

  test('a programmatic override is checked too', () => {
    expect(errorOf(() => resolveProxySettings({}, { protocol: 'x' as 'vllm' })).message).toContain('protocol');
    expect(errorOf(() => resolveProxySettings({}, { engineClient: 'curl' as 'fetch' })).message).toContain('engineClient');
  });

  test('engine_client: the legs on sockets by default, on fetch when asked; anything else refused naming the field', () => {
    expect(resolveProxySettings({}).engineClient).toBe('sockets');
    expect(settingsOf({ pdlink: { proxy: { engine_client: 'fetch' } } }).proxy.engineClient).toBe('fetch');
    expect(settingsOf({ pdlink: { proxy: { engine_client: 'sockets' } } }).proxy.engineClient).toBe('sockets');
    const bad = errorOf(() => settingsOf({ pdlink: { proxy: { engine_client: 'undici' } } }));
    expect(bad).toBeInstanceOf(ConfigError);
    expect(bad.message).toContain('pdlink.proxy.engine_client');
    expect(bad.message).toContain('sockets, fetch');
  });

  test('max_answer_bytes: 8 MiB by default; read from the file; out of range refused naming the field', () => {
    expect(resolveProxySettings({}).maxAnswerBytes).toBe(8 * 1024 * 1024);
    expect(settingsOf({ pdlink: { proxy: { max_answer_bytes: 65_536 } } }).proxy.maxAnswerBytes).toBe(65_536);
    for (const bad of [100, 2 ** 31, 1.5, '1MB']) {
      const err = errorOf(() => settingsOf({ pdlink: { proxy: { max_answer_bytes: bad } } }));
      expect(err).toBeInstanceOf(ConfigError);
      expect(err.message).toContain('pdlink.proxy.max_answer_bytes');
    }
    expect(errorOf(() => resolveProxySettings({}, { maxAnswerBytes: 0 })).message).toContain('maxAnswerBytes');
  });

  test('max_idle_connections: unset by default (the runtime derives it); read from the file; bad values refused naming the field', () => {
    expect(resolveProxySettings({}).maxIdleConnections).toBeUndefined();
    expect(settingsOf({ pdlink: { proxy: { max_idle_connections: 0 } } }).proxy.maxIdleConnections).toBe(0);
    expect(settingsOf({ pdlink: { proxy: { max_idle_connections: 300 } } }).proxy.maxIdleConnections).toBe(300);
    const bad = errorOf(() => settingsOf({ pdlink: { proxy: { max_idle_connections: -1 } } }));
    expect(bad).toBeInstanceOf(ConfigError);
    expect(bad.message).toContain('pdlink.proxy.max_idle_connections');
    expect(errorOf(() => resolveProxySettings({}, { maxIdleConnections: 0.5 })).message).toContain('maxIdleConnections');
  });
});
