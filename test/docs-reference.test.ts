/**
 * The generated pages are current: each committed page is exactly what scripts/docs-reference.ts
 * generates from the schemas, the metrics registries and bench/results/, and every
 * configuration key has a description (and no description names a key that is gone).
 */
import { describe, expect, test } from 'bun:test';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { CONFIGURATION_PAGE, METRICS_PAGE, configurationPage, metricsPage, undocumented } from '../scripts/reference/pages.ts';
import { PERFORMANCE_PAGE, performancePage } from '../scripts/reference/performance.ts';

const ROOT = join(import.meta.dir, '..');
const committed = (page: string): string => readFileSync(join(ROOT, page), 'utf8');

describe('the generated reference pages', () => {
  test('every configuration key has a description, and every description a key', () => {
    expect(undocumented()).toEqual({ missing: [], unknown: [] });
  });

  test(`${CONFIGURATION_PAGE} is what the schemas generate (npm run docs:reference)`, () => {
    expect(committed(CONFIGURATION_PAGE)).toBe(configurationPage());
  });

  test(`${METRICS_PAGE} is what the registries generate (npm run docs:reference)`, async () => {
    expect(committed(METRICS_PAGE)).toBe(await metricsPage());
  });

  test(`${PERFORMANCE_PAGE} is what bench/results generates (npm run docs:reference)`, () => {
    expect(committed(PERFORMANCE_PAGE)).toBe(performancePage(ROOT));
  });
});
