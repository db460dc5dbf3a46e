/**
 * Small files, split by concept: no source file of src/ or native/src/ is over 15 KB. Tests beside
 * the code, and the device runtime's public header (native/include/pdrt.h, one header for runtime
 * authors, mostly the ABI's documentation), are not held to it.
 */
import { describe, expect, test } from 'bun:test';
import { readdirSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';

const ROOT = join(import.meta.dir, '..');
const LIMIT = 15 * 1024;

function files(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => (e.isDirectory() ? files(join(dir, e.name)) : [join(dir, e.name)]));
}

/** The source files over `limit` bytes under `dirs`, as paths from the repository's root. */
function oversized(dirs: readonly string[], limit: number): string[] {
  return dirs
    .flatMap((d) => files(join(ROOT, d)))
    .filter((f) => /\.(ts|c|h)$/.test(f) && !f.endsWith('.test.ts'))
    .filter((f) => statSync(f).size > limit)
    .map((f) => relative(ROOT, f));
}

describe('source files', () => {
  test('none of src/ or native/src/ is over 15 KB', () => {
    expect(oversized(['src', 'native/src'], LIMIT)).toEqual([]);
  });

  test('the check finds a file over the limit', () => {
    expect(oversized(['native/src'], 10 * 1024)).toContain('native/src/handshake.c');
  });
});
