import { expect, test } from 'bun:test';
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';

// The C test of the reference runtime (native/test/test_pdrt.c) is part of the suite: make builds
// what changed and runs it; its exit code is its number of failed checks.
test('make -C native test passes', () => {
  const result = spawnSync('make', ['-s', '-C', join(import.meta.dir, '..', 'native'), 'test'], { encoding: 'utf8', timeout: 120_000 });
  if (result.status !== 0) console.error(result.stdout, result.stderr);
  expect(result.error).toBeUndefined();
  expect(result.stdout).toContain('test_pdrt: all checks passed');
  expect(result.status).toBe(0);
}, 150_000);
