/**
 * `npm install` on the oldest Node that package.json's `engines` names prints no EBADENGINE
 * warning: every package of the lock file (dev tools included) accepts that Node.
 */
import { describe, expect, test } from 'bun:test';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { REPO_ROOT } from './support/child.ts';

const pkg = JSON.parse(readFileSync(join(REPO_ROOT, 'package.json'), 'utf8')) as { engines: { node: string } };
const lock = JSON.parse(readFileSync(join(REPO_ROOT, 'package-lock.json'), 'utf8')) as {
  packages: Record<string, { version?: string; engines?: { node?: string } | string[] }>;
};

describe('engines', () => {
  test("every locked package accepts the oldest Node of package.json's engines", () => {
    const oldest = /^>=\s*(\d+\.\d+\.\d+)$/.exec(pkg.engines.node)?.[1];
    expect(oldest).toBeDefined();
    const refusing = Object.entries(lock.packages)
      .flatMap(([path, p]) => {
        const range = Array.isArray(p.engines) ? undefined : p.engines?.node;
        return range === undefined || Bun.semver.satisfies(oldest!, range) ? [] : [`${path || 'pdlink'}@${p.version}: node ${range}`];
      })
      .sort();
    expect(refusing).toEqual([]);
  });
});
