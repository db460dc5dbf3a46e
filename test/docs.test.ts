/**
 * Documentation that cannot rot: every relative link and `#anchor` of README.md and docs/ resolves
 * (anchors by GitHub's slug rules), and every fenced code block is either marked `excerpt` or marked
 * `run=<id>` and read by a test through `docBlock(page, id)` (test/support/docs.ts). The README
 * stays a front door: its two commands first, as CI runs them, and at most 20 KB.
 */
import { describe, expect, test } from 'bun:test';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { docBlock, DOCS_ROOT, fencedBlocks, githubSlug, headingAnchors, markdownLinks } from './support/docs.ts';

/** README.md and every Markdown page under docs/, as paths from the repository's root. */
function pages(): string[] {
  const out = ['README.md'];
  const walk = (dir: string): void => {
    for (const entry of readdirSync(join(DOCS_ROOT, dir), { withFileTypes: true }).sort((a, b) => a.name.localeCompare(b.name))) {
      const path = join(dir, entry.name);
      if (entry.isDirectory()) walk(path);
      else if (entry.name.endsWith('.md')) out.push(path);
    }
  };
  walk('docs');
  return out;
}

const read = (page: string): string => readFileSync(join(DOCS_ROOT, page), 'utf8');

/** Every `docBlock('<page>', '<id>')` call of the test files (the helper's own examples aside), as `page#id`. */
function blocksReadByTests(): Set<string> {
  const found = new Set<string>();
  const walk = (dir: string): void => {
    for (const entry of readdirSync(join(DOCS_ROOT, dir), { withFileTypes: true })) {
      const path = join(dir, entry.name);
      if (entry.isDirectory()) walk(path);
      else if (entry.name.endsWith('.ts') && path !== join('test', 'support', 'docs.ts'))
        for (const m of read(path).matchAll(/docBlock\(\s*'([^']+\.md)'\s*,\s*'([^']+)'\s*\)/g)) found.add(`${m[1]}#${m[2]}`);
    }
  };
  walk('test');
  return found;
}

/** Why one link of `page` does not resolve, or undefined when it does. */
export function brokenLink(page: string, target: string, readPage: (path: string) => string | undefined): string | undefined {
  if (/^[a-z][a-z0-9+.-]*:/i.test(target) || target.startsWith('//')) return undefined; // absolute: not ours to check
  const hash = target.indexOf('#');
  const path = hash < 0 ? target : target.slice(0, hash);
  const anchor = hash < 0 ? undefined : decodeURIComponent(target.slice(hash + 1));
  const file = path === '' ? page : relative(DOCS_ROOT, join(DOCS_ROOT, dirname(page), decodeURIComponent(path)));
  if (file.startsWith('..')) return `${target} leaves the repository`;
  const text = readPage(file);
  if (text === undefined) return `${target}: no such file ${file}`;
  if (anchor === undefined) return undefined;
  if (!file.endsWith('.md')) return `${target}: an anchor into a file that is not Markdown`;
  return headingAnchors(text).has(anchor) ? undefined : `${target}: ${file} has no heading with the anchor #${anchor}`;
}

function readFromRepository(file: string): string | undefined {
  const path = join(DOCS_ROOT, file);
  if (!existsSync(path)) return undefined;
  return statSync(path).isDirectory() ? '' : file.endsWith('.md') ? readFileSync(path, 'utf8') : '';
}

describe('links and anchors', () => {
  test('every relative link and #anchor of README.md and docs/ resolves', () => {
    const broken: string[] = [];
    for (const page of pages())
      for (const { target, line } of markdownLinks(read(page))) {
        const why = brokenLink(page, target, readFromRepository);
        if (why !== undefined) broken.push(`${page}:${line}: ${why}`);
      }
    expect(broken).toEqual([]);
  });

  test('there are links to check', () => {
    expect(pages().flatMap((page) => markdownLinks(read(page))).length).toBeGreaterThan(100);
  });

  test("anchors follow GitHub's slugs", () => {
    expect(githubSlug('Tracing requests (OpenTelemetry)')).toBe('tracing-requests-opentelemetry');
    expect(githubSlug('Benchmarking a deployment with `pdlink bench`')).toBe('benchmarking-a-deployment-with-pdlink-bench');
    expect(githubSlug("The report's JSON (schema `pdlink-bench-report`, version 1)")).toBe(
      'the-reports-json-schema-pdlink-bench-report-version-1',
    );
    expect(githubSlug('Threads that outlive calls: `-z nodelete`')).toBe('threads-that-outlive-calls--z-nodelete');
    expect(githubSlug('`max_removed_fraction`')).toBe('max_removed_fraction');
    expect(githubSlug('Kill -9 → failover, p50 ≤ 3 s')).toBe('kill--9--failover-p50--3-s');
    expect([...headingAnchors('# A\n## A\n```sh excerpt\n# not a heading\n```\n### A b\n<a id="here"></a>\n')]).toEqual([
      'a',
      'a-1',
      'a-b',
      'here',
    ]);
  });

  test('a broken link, a missing anchor, an anchor into code and a path out of the repository are each reported', () => {
    const files: Record<string, string> = { 'docs/a.md': '# Title\n\n```sh excerpt\n# in code\n```\n', 'docs/b.png': '' };
    const readPage = (file: string): string | undefined => files[file];
    expect(brokenLink('docs/a.md', '#title', readPage)).toBeUndefined();
    expect(brokenLink('README.md', 'docs/a.md#title', readPage)).toBeUndefined();
    expect(brokenLink('docs/a.md', 'b.png', readPage)).toBeUndefined();
    expect(brokenLink('docs/a.md', 'https://example.com/x#y', readPage)).toBeUndefined();
    expect(brokenLink('docs/a.md', 'c.md', readPage)).toBe('c.md: no such file docs/c.md');
    expect(brokenLink('docs/a.md', '#nothing', readPage)).toBe('#nothing: docs/a.md has no heading with the anchor #nothing');
    expect(brokenLink('docs/a.md', '#in-code', readPage)).toBe('#in-code: docs/a.md has no heading with the anchor #in-code');
    expect(brokenLink('docs/a.md', 'b.png#x', readPage)).toBe('b.png#x: an anchor into a file that is not Markdown');
    expect(brokenLink('docs/a.md', '../../x.md', readPage)).toBe('../../x.md leaves the repository');
    expect(markdownLinks('`[not](a link)` and [one](x.md) and\n[ref]: y.md\n```md excerpt\n[no](z.md)\n```\n')).toEqual([
      { target: 'x.md', line: 1 },
      { target: 'y.md', line: 2 },
    ]);
  });
});

describe('code blocks', () => {
  test('every fenced block is marked excerpt or run=<id>, not both, not neither', () => {
    const unmarked: string[] = [];
    for (const page of pages())
      for (const block of fencedBlocks(read(page)))
        if (block.excerpt === (block.runId !== undefined)) unmarked.push(`${page}:${block.line}: \`\`\`${block.info}`);
    expect(unmarked).toEqual([]);
  });

  test('run ids are unique per page and spelled as ids', () => {
    for (const page of pages()) {
      const ids = fencedBlocks(read(page)).flatMap((b) => (b.runId === undefined ? [] : [b.runId]));
      expect({ page, duplicates: ids.filter((id, i) => ids.indexOf(id) !== i) }).toEqual({ page, duplicates: [] });
      for (const id of ids) expect({ page, id, ok: /^[a-z0-9][a-z0-9-]*$/.test(id) }).toEqual({ page, id, ok: true });
    }
  });

  test('every run=<id> block is read by a test, and every docBlock call names a block that exists', () => {
    const marked = new Set(
      pages().flatMap((page) => fencedBlocks(read(page)).flatMap((b) => (b.runId === undefined ? [] : [`${page}#${b.runId}`]))),
    );
    const readByTests = blocksReadByTests();
    expect([...marked].filter((block) => !readByTests.has(block))).toEqual([]);
    expect([...readByTests].filter((block) => !marked.has(block))).toEqual([]);
  });

  test('a block without a mark, and one with both, are found', () => {
    const blocks = fencedBlocks('```sh\nls\n```\n\n````ts run=x excerpt\nconst a = 1;\n```\n````\n  ~~~ excerpt\n  b\n  ~~~\n');
    expect(
      blocks.map((b) => ({ language: b.language, run: b.runId, excerpt: b.excerpt, text: b.text, line: b.line, end: b.endLine })),
    ).toEqual([
      { language: 'sh', run: undefined, excerpt: false, text: 'ls\n', line: 1, end: 3 },
      { language: 'ts', run: 'x', excerpt: true, text: 'const a = 1;\n```\n', line: 5, end: 8 },
      { language: '', run: undefined, excerpt: true, text: 'b\n', line: 9, end: 11 },
    ]);
  });

  test('docBlock fails for a block a page does not have', () => {
    const missing = 'no-such-block';
    expect(() => docBlock('README.md', missing)).toThrow('README.md has no code block marked run=no-such-block');
  });
});

describe('the front door', () => {
  test("README.md's first two blocks are the start and test commands, and CI runs the test command verbatim", () => {
    const blocks = fencedBlocks(read('README.md'));
    expect(blocks.slice(0, 2).map((b) => b.runId)).toEqual(['start', 'test']);
    expect(docBlock('README.md', 'start')).toBe('npm install && npm start\n');
    expect(docBlock('README.md', 'test')).toBe('npm install && npm test\n');
    expect(read('.ci/run')).toContain(`{ ${docBlock('README.md', 'test').trim()}; }`);
    // The start command is the install plus the first request's first command.
    expect(docBlock('README.md', 'start')).toBe(`npm install && ${docBlock('README.md', 'coordinator')}`);
  });

  test('README.md stays at most 20 KB', () => {
    expect(statSync(join(DOCS_ROOT, 'README.md')).size).toBeLessThanOrEqual(20 * 1024);
  });
});
