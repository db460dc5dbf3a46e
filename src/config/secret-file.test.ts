import { afterAll, describe, expect, test } from 'bun:test';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ConfigError } from '../core/errors.ts';
import { readApiKeyFile, readApiKeys, readManagementToken } from './secret-file.ts';

const dir = mkdtempSync(join(tmpdir(), 'pdlink-secret-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const file = (name: string, text: string) => {
  const path = join(dir, name);
  writeFileSync(path, text);
  return path;
};

describe('secret files', () => {
  test('the token without its newline; the env wins over the config key', () => {
    expect(readManagementToken(file('t', 'tok-1\n'), {})).toBe('tok-1');
    expect(readManagementToken(file('t0', 'a'), { PDLINK_MANAGEMENT_TOKEN_FILE: file('t2', 'from-env') })).toBe('from-env');
    expect(readManagementToken(undefined, {})).toBeUndefined();
  });

  test('fail closed naming the key, never the content', () => {
    expect(() => readManagementToken(join(dir, 'missing'), {})).toThrow(ConfigError);
    expect(() => readManagementToken(join(dir, 'missing'), {})).toThrow('pdlink.auth.management_token_file: cannot read');
    expect(() => readManagementToken(file('e', ' \n'), {})).toThrow('is empty');
    expect(() => readManagementToken(undefined, { PDLINK_MANAGEMENT_TOKEN_FILE: file('e2', '') })).toThrow('PDLINK_MANAGEMENT_TOKEN_FILE');
    let message = '';
    try {
      readManagementToken(file('two', 'secret-one secret-two'), {});
    } catch (err) {
      message = (err as Error).message;
    }
    expect(message).toContain('one token on one line');
    expect(message).not.toContain('secret-one');
  });

  test('API keys: one per line, comments and blank lines skipped; none is an error', () => {
    expect(readApiKeys(file('k', '# ops keys\nk1\n\n  k2  \n#k3\n'), {})).toEqual(['k1', 'k2']);
    expect(() => readApiKeys(file('k0', '# nothing\n\n'), {})).toThrow('pdlink.auth.api_keys_file: ');
    expect(() => readApiKeys(undefined, { PDLINK_API_KEYS_FILE: join(dir, 'nope') })).toThrow('PDLINK_API_KEYS_FILE: cannot read');
  });

  test('API keys may name their tenant (`TENANT KEY`); a bad line names its number, never the key', () => {
    const read = readApiKeyFile(file('named', 'chat-app sk-1\nsk-2\n  nightly   sk-3 \n'), {})!;
    expect(read.keys).toEqual(['sk-1', 'sk-2', 'sk-3']);
    expect([...read.tenants]).toEqual([
      ['sk-1', 'chat-app'],
      ['sk-3', 'nightly'],
    ]);
    let message = '';
    try {
      readApiKeyFile(file('three', 'a b sk-secret\n'), {});
    } catch (err) {
      message = (err as Error).message;
    }
    expect(message).toContain('key 1 contains whitespace');
    expect(message).not.toContain('sk-secret');
    expect(() => readApiKeyFile(file('badname', 'bad/name sk-x\n'), {})).toThrow('line 1: the tenant must be');
  });
});
