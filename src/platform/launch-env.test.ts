import { afterAll, describe, expect, test } from 'bun:test';
import { spawnSync } from 'node:child_process';
import { chmodSync, copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { LAUNCH_ENV, launchEnv } from './launch-env.ts';

const REPO = join(import.meta.dir, '..', '..');

describe('launchEnv', () => {
  test('gives every default when the caller set none', () => {
    expect(launchEnv({})).toEqual({ ...LAUNCH_ENV });
    expect(LAUNCH_ENV['BUN_JSC_forceRAMSize']).toBe('268435456');
  });

  test("keeps the caller's own value", () => {
    const env = launchEnv({ BUN_JSC_forceRAMSize: '1073741824', UNRELATED: 'x' });
    expect(env['BUN_JSC_forceRAMSize']).toBe('1073741824');
    expect(env['BUN_CONFIG_MAX_HTTP_REQUESTS']).toBe('65535');
    expect(env['UNRELATED']).toBeUndefined();
  });
});

describe('bin/pdlink', () => {
  // The launcher, copied beside a stand-in for the Bun npm installs that prints its environment.
  const root = mkdtempSync(join(tmpdir(), 'pdlink-launch-'));
  mkdirSync(join(root, 'bin'));
  mkdirSync(join(root, 'node_modules', '.bin'), { recursive: true });
  copyFileSync(join(REPO, 'bin', 'pdlink'), join(root, 'bin', 'pdlink'));
  writeFileSync(join(root, 'node_modules', '.bin', 'bun'), '#!/bin/sh\nenv\n');
  chmodSync(join(root, 'bin', 'pdlink'), 0o755);
  chmodSync(join(root, 'node_modules', '.bin', 'bun'), 0o755);
  afterAll(() => rmSync(root, { recursive: true, force: true }));

  const run = (env: Record<string, string>): Record<string, string> => {
    const out = spawnSync(join(root, 'bin', 'pdlink'), ['coordinator'], {
      env: { PATH: process.env['PATH'] ?? '', ...env },
      encoding: 'utf8',
    });
    expect(out.status).toBe(0);
    return Object.fromEntries(out.stdout.split('\n').map((line) => [line.slice(0, line.indexOf('=')), line.slice(line.indexOf('=') + 1)]));
  };

  test('starts Bun with every launch default', () => {
    const env = run({});
    for (const [name, value] of Object.entries(LAUNCH_ENV)) expect(env[name]).toBe(value);
  });

  test("leaves the caller's values alone", () => {
    const env = run({ BUN_JSC_forceRAMSize: '1073741824', BUN_CONFIG_MAX_HTTP_REQUESTS: '1000' });
    expect(env['BUN_JSC_forceRAMSize']).toBe('1073741824');
    expect(env['BUN_CONFIG_MAX_HTTP_REQUESTS']).toBe('1000');
  });
});

test("src/main.ts's first line starts Bun with the same defaults", () => {
  const shebang = readFileSync(join(REPO, 'src', 'main.ts'), 'utf8').split('\n')[0]!;
  for (const [name, value] of Object.entries(LAUNCH_ENV)) expect(shebang).toContain(` ${name}=${value} `);
});
