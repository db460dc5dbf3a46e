import { describe, expect, test } from 'bun:test';
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { PARTS } from './proxy-ablation-parts.ts';

const repo = resolve(import.meta.dir, '..');
const patch = join(repo, 'bench', 'proxy-ablation.patch');

describe('proxy-ablation.patch', () => {
  test('applies to the code as it is', () => {
    // Throws (git's exit status) when a hunk no longer matches the source.
    expect(() => execFileSync('git', ['apply', '--check', patch], { cwd: repo, stdio: 'pipe' })).not.toThrow();
  });

  test('switches exactly the parts the bench names', () => {
    const switched = new Set([...readFileSync(patch, 'utf8').matchAll(/^\+.*\boff\('([a-z-]+)'\)/gm)].map((m) => m[1]));
    expect([...switched].sort()).toEqual([...PARTS].sort());
  });
});
