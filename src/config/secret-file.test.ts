import { afterAll, describe, expect, test } from 'bun:test';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ConfigError } from '../core/errors.ts';
import { readApiKeys, readManagementToken } from './secret-file.ts';

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
});
