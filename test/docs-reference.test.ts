/**
 * The generated pages are current: each committed page is exactly what scripts/docs-reference.ts
 * generates from the schemas, the metrics registries and bench/results/, and every
 * configuration key has a description (and no description names a key that is gone).
 */
import { describe, expect, test } from 'bun:test';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
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

describe('the performance page', () => {
  test("a result's runs are listed under it; a result of no group is under Other", () => {
    const root = mkdtempSync(join(tmpdir(), 'pdlink-perf-page-'));
    try {
      const results = join(root, 'bench', 'results');
      mkdirSync(results, { recursive: true });
      const write = (name: string, json: object): void => writeFileSync(join(results, `${name}.json`), JSON.stringify(json));
      write('planner', { question: 'How much goodput?', summary: 'planner 2.00× the static split' });
      write('planner-off', { summary: 'one run' });
      writeFileSync(join(results, 'planner-off.html'), '<html></html>');
      write('planner-profile', { summary: 'a profile' });
      writeFileSync(join(results, 'planner-load.html'), '<html></html>');
      write('kv-routing', { summary: 'kv' });
      write('kv-routing-multi-tenant-heavy', { summary: 'heavier' });
      write('unknown-result', { summary: 'new' });
      const page = performancePage(root);
      expect(page).toContain('## The P:D planner');
      expect(page).toContain(
        'Its runs: [planner-load](../bench/results/planner-load.html) · [planner-off](../bench/results/planner-off.html) · [planner-profile](../bench/results/planner-profile.json)',
      );
      expect(page).not.toContain('### planner-off');
      // A grouped result is its own section, never another's run.
      expect(page).toContain('### kv-routing-multi-tenant-heavy');
      expect(page).not.toContain('[kv-routing-multi-tenant-heavy](');
      expect(page.slice(page.indexOf('## Other'))).toContain('### unknown-result');
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });
});
