#!/usr/bin/env bun
/**
 * Writes the generated pages: docs/reference/configuration.md and metrics.md from the schemas and
 * the processes' metrics registries, docs/performance.md from bench/results/*.json; with `--check`, writes nothing and exits 1 when a
 * committed page differs from what would be written, or a configuration key has no description.
 *   npm run docs:reference            # write
 *   npm run docs:reference -- --check # check
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { CONFIGURATION_PAGE, METRICS_PAGE, configurationPage, metricsPage, undocumented } from './reference/pages.ts';
import { PERFORMANCE_PAGE, performancePage } from './reference/performance.ts';

const root = join(import.meta.dirname, '..');
const check = process.argv.includes('--check');
const pages: [string, string][] = [
  [CONFIGURATION_PAGE, configurationPage()],
  [METRICS_PAGE, await metricsPage()],
  [PERFORMANCE_PAGE, performancePage(root)],
];
let stale = 0;
for (const [page, text] of pages) {
  const path = join(root, page);
  let current: string | undefined;
  try {
    current = readFileSync(path, 'utf8');
  } catch {
    current = undefined;
  }
  if (current === text) continue;
  if (check) {
    console.error(`${page} is not what scripts/docs-reference.ts generates: run npm run docs:reference`);
    stale++;
  } else {
    mkdirSync(dirname(path), { recursive: true });
    writeFileSync(path, text);
    console.log(`wrote ${page}`);
  }
}
const { missing, unknown } = undocumented();
for (const key of missing) console.error(`no description in scripts/reference/config-docs.ts for ${key}`);
for (const key of unknown) console.error(`scripts/reference/config-docs.ts describes ${key}, which no schema has`);
process.exit(stale > 0 || missing.length > 0 || unknown.length > 0 ? 1 : 0);
