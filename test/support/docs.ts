/**
 * The documentation's code blocks, as the tests read them. Every fenced block of README.md and
 * docs/ carries a mark in its info string: `excerpt` (shown, not run) or `run=<id>` (a test runs
 * it, reading it here by page and id). test/docs.test.ts checks that every block has one mark,
 * that ids are unique per page and that each `run=` block is read by some test, so a page cannot
 * show a command the suite no longer runs. Works on Bun and Deno (node:fs only).
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The repository's root directory. */
export const DOCS_ROOT = fileURLToPath(new URL('../..', import.meta.url));

export interface FencedBlock {
  /** The info string after the opening fence, e.g. `sh run=refresh`. */
  readonly info: string;
  /** The first word of the info string (`sh`, `json`, `ts`), or '' when there is none. */
  readonly language: string;
  /** The `<id>` of a `run=<id>` mark, or undefined. */
  readonly runId: string | undefined;
  /** Whether the info string carries `excerpt`. */
  readonly excerpt: boolean;
  /** The block's text, without the fences (and without the fence's indentation). */
  readonly text: string;
  /** 1-based line of the opening fence. */
  readonly line: number;
  /** 1-based line of the closing fence (the last line when the block is never closed). */
  readonly endLine: number;
}

const OPEN = /^( {0,3})(`{3,}|~{3,})(.*)$/;

/**
 * Every fenced code block of a Markdown text, in order.
 * @example fencedBlocks('```sh excerpt\nls\n```\n')[0].text // 'ls\n'
 */
export function fencedBlocks(markdown: string): FencedBlock[] {
  const lines = markdown.split('\n');
  const blocks: FencedBlock[] = [];
  for (let i = 0; i < lines.length; i++) {
    const open = OPEN.exec(lines[i]!);
    if (open === null) continue;
    const [, indent, fence, rest] = open as unknown as [string, string, string, string];
    if (fence[0] === '`' && rest.includes('`')) continue; // not a fence: inline code on one line
    const close = new RegExp(`^ {0,3}${fence[0] === '`' ? '`' : '~'}{${fence.length},}\\s*$`);
    const body: string[] = [];
    let j = i + 1;
    while (j < lines.length && !close.test(lines[j]!)) {
      const line = lines[j]!;
      const strip = Math.min(indent.length, line.length - line.trimStart().length);
      body.push(line.slice(strip));
      j++;
    }
    const info = rest.trim();
    const words = info.split(/\s+/).filter((w) => w !== '');
    const run = words.find((w) => w.startsWith('run='));
    blocks.push({
      info,
      language: words[0] !== undefined && words[0] !== 'excerpt' && !words[0].startsWith('run=') ? words[0] : '',
      runId: run === undefined ? undefined : run.slice('run='.length),
      excerpt: words.includes('excerpt'),
      text: body.length === 0 ? '' : `${body.join('\n')}\n`,
      line: i + 1,
      endLine: Math.min(j + 1, lines.length),
    });
    i = j;
  }
  return blocks;
}

/**
 * The text of the block marked `run=<id>` on a page (a path from the repository's root); throws
 * when the page has no such block, so a test fails when its block is renamed or removed.
 * @example const refresh = docBlock('README.md', 'refresh');
 */
export function docBlock(page: string, id: string): string {
  const blocks = fencedBlocks(readFileSync(join(DOCS_ROOT, page), 'utf8')).filter((b) => b.runId === id);
  if (blocks.length === 0) throw new Error(`${page} has no code block marked run=${id}`);
  if (blocks.length > 1) throw new Error(`${page} has ${blocks.length} code blocks marked run=${id}`);
  return blocks[0]!.text;
}

/**
 * A gateway block of the docs as the source of a module a test can import: what comes before its
 * `// on shutdown` line runs at import, the rest becomes `export async function onShutdown()`, and
 * `names` are exported. Each `[from, to]` of `replace` is applied once, and must apply.
 * @example writeFileSync(path, blockAsModule(docBlock('docs/plugin.md', 'bun-gateway'), ['pdlink', 'server'], [["port: 8080", 'port: 0']]));
 */
export function blockAsModule(block: string, names: readonly string[], replace: readonly (readonly [string, string])[]): string {
  const [start, shutdown] = block.split('// on shutdown\n');
  if (start === undefined || shutdown === undefined) throw new Error('the block has no "// on shutdown" line');
  let source = start;
  for (const [from, to] of replace) {
    if (!source.includes(from)) throw new Error(`the block does not contain ${from}`);
    source = source.replace(from, to);
  }
  return `${source}export { ${names.join(', ')} };\nexport async function onShutdown() {\n${shutdown}}\n`;
}

/**
 * The anchor GitHub gives a heading: lowercase, spaces to '-', everything but letters, digits, '_'
 * and '-' dropped (the heading's rendered text: code spans, emphasis and links unwrapped).
 * @example githubSlug('Tracing requests (OpenTelemetry)') // 'tracing-requests-opentelemetry'
 */
export function githubSlug(heading: string): string {
  const text = heading
    .replace(/!?\[([^\]]*)\]\([^)]*\)/g, '$1')
    .replace(/<[^>]+>/g, '')
    .replace(/[`*]/g, '');
  return text
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{M}\p{N}_\- ]/gu, '')
    .replace(/ /g, '-');
}

/** The text of a page with its fenced blocks blanked (lines kept), so nothing inside them counts as prose. */
function prose(markdown: string): string[] {
  const lines = markdown.split('\n');
  for (const block of fencedBlocks(markdown)) for (let i = block.line - 1; i < block.endLine; i++) lines[i] = '';
  return lines;
}

/**
 * Every anchor a page offers: its headings' slugs (a repeated slug gets -1, -2, … as on GitHub) and
 * the ids of its HTML anchors.
 * @example headingAnchors('# A\n## A\n') // Set { 'a', 'a-1' }
 */
export function headingAnchors(markdown: string): Set<string> {
  const anchors = new Set<string>();
  const seen = new Map<string, number>();
  for (const line of prose(markdown)) {
    const heading = /^ {0,3}#{1,6}[ \t]+(.*?)(?:[ \t]+#+)?[ \t]*$/.exec(line);
    if (heading !== null) {
      const slug = githubSlug(heading[1]!);
      const count = seen.get(slug) ?? 0;
      seen.set(slug, count + 1);
      anchors.add(count === 0 ? slug : `${slug}-${count}`);
    }
    for (const m of line.matchAll(/<a\s+(?:id|name)="([^"]+)"/g)) anchors.add(m[1]!);
  }
  return anchors;
}

/**
 * Every link target of a page's prose (inline links, images and reference definitions; not inside
 * code), with its 1-based line.
 * @example markdownLinks('See [x](docs/a.md#b).') // [{ target: 'docs/a.md#b', line: 1 }]
 */
export function markdownLinks(markdown: string): { target: string; line: number }[] {
  const out: { target: string; line: number }[] = [];
  prose(markdown).forEach((raw, i) => {
    const line = raw.replace(/`[^`]*`/g, '');
    for (const m of line.matchAll(/\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g)) out.push({ target: m[1]!, line: i + 1 });
    const definition = /^ {0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s|$)/.exec(line);
    if (definition !== null) out.push({ target: definition[1]!, line: i + 1 });
  });
  return out;
}
