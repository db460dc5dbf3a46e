/**
 * What a user installs: the tarball `npm pack` would publish holds the sources, the launcher and
 * what builds the native runtime, and none of the tests, doubles, fixtures or benchmarks; and the
 * Bun that bin/pdlink starts is a dependency, so an installed package finds it.
 */
import { describe, expect, test } from 'bun:test';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

const ROOT = join(import.meta.dir, '..');

function packedFiles(): string[] {
  const proc = Bun.spawnSync(['npm', 'pack', '--dry-run', '--json', '--ignore-scripts'], { cwd: ROOT, stdout: 'pipe', stderr: 'pipe' });
  if (proc.exitCode !== 0) throw new Error(`npm pack failed: ${proc.stderr.toString()}`);
  const [pack] = JSON.parse(proc.stdout.toString()) as { files: { path: string }[] }[];
  return pack!.files.map((f) => f.path);
}

describe('the published package', () => {
  test('holds the launcher, the sources and the native build inputs, and no test code', () => {
    const files = packedFiles();
    for (const needed of [
      'bin/pdlink',
      'src/main.ts',
      'src/index.ts',
      'native/Makefile',
      'native/include/pdrt.h',
      'native/src/ctx.c',
      'scripts/build-native.mjs',
      'README.md',
      'package.json',
    ])
      expect(files).toContain(needed);
    expect(files.filter((f) => f.endsWith('.test.ts'))).toEqual([]);
    expect(files.filter((f) => /^(test|bench|native\/test|native\/build|native\/bench)\//.test(f))).toEqual([]);
  });

  test('Bun, which bin/pdlink runs, is installed with pdlink', () => {
    const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { dependencies: Record<string, string> };
    expect(Object.keys(pkg.dependencies)).toContain('bun');
  });
});
