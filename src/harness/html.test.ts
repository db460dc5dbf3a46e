import { describe, expect, test } from 'bun:test';
import { sampleReport } from '../../test/fixtures/bench-report.ts';
import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CHART_LIBRARY_FILES, chartLibrary, writeChartLibrary } from './chart-library.ts';
import { renderHtml } from './html.ts';

/** HTML elements that never have an end tag. */
const VOID = new Set(['meta', 'link', 'br', 'img', 'input', 'hr']);

interface Parsed {
  readonly tags: string[];
  readonly unclosed: string[];
  readonly urlAttributes: string[];
  readonly scripts: { type: string | null; text: string }[];
  readonly styles: string[];
  readonly title: string;
}

/** Parses the page with Bun's HTMLRewriter (lol-html): every element, its end tag, attributes and text. */
async function parse(html: string): Promise<Parsed> {
  const tags: string[] = [];
  const open: string[] = [];
  const urlAttributes: string[] = [];
  const scripts: { type: string | null; text: string }[] = [];
  const styles: string[] = [];
  let title = '';
  const rewriter = new HTMLRewriter()
    .on('*', {
      element(el) {
        tags.push(el.tagName);
        for (const [name, value] of el.attributes)
          if (['src', 'href', 'action', 'srcset'].includes(name)) urlAttributes.push(`${name}=${value}`);
        if (VOID.has(el.tagName)) return;
        open.push(el.tagName);
        el.onEndTag((end) => {
          if (open[open.length - 1] === end.name) open.pop();
        });
      },
    })
    .on('script', {
      element(el) {
        scripts.push({ type: el.getAttribute('type'), text: '' });
      },
      text(chunk) {
        scripts[scripts.length - 1]!.text += chunk.text;
      },
    })
    .on('style', {
      element() {
        styles.push('');
      },
      text(chunk) {
        styles[styles.length - 1] += chunk.text;
      },
    })
    .on('title', {
      text(chunk) {
        title += chunk.text;
      },
    });
  await rewriter.transform(new Response(html)).text();
  return { tags, unclosed: open, urlAttributes, scripts, styles, title };
}

describe('the HTML report', () => {
  const report = sampleReport();
  const html = renderHtml(report);

  test('is a well-formed page: doctype, every element closed, a title', async () => {
    const page = await parse(html);
    expect(html.startsWith('<!DOCTYPE html>\n<html lang="en">')).toBe(true);
    expect(page.tags.slice(0, 3)).toEqual(['html', 'head', 'meta']);
    expect(page.tags).toContain('body');
    expect(page.unclosed).toEqual([]);
    expect(page.title).toBe('pdlink bench: http://127.0.0.1:9');
  });

  test('inlines uPlot and its style sheet and references nothing outside the file', async () => {
    const page = await parse(html);
    expect(page.urlAttributes).toEqual([]);
    const library = chartLibrary();
    expect(page.scripts.some((s) => s.type === null && s.text === library.script)).toBe(true);
    expect(page.styles).toContain(library.style);
    expect(library.script).toContain('uPlot');
    // No URL at all, besides the library's own licence comment.
    const urls = [...html.matchAll(/(?:https?:)?\/\/[a-z0-9.-]+\.[a-z]{2,}[^\s"')]*/gi)].map((m) => m[0]);
    expect(urls.filter((u) => !u.startsWith('https://github.com/leeoniya/uPlot'))).toEqual([]);
    expect(html).not.toMatch(/@import|url\(\s*['"]?https?:/);
  });

  test('carries the chart data of every run, from the report', async () => {
    const page = await parse(html);
    const data = page.scripts.find((s) => s.type === 'application/json');
    expect(data).toBeDefined();
    const parsed = JSON.parse(data!.text) as {
      runs: { label: string; cdf: Record<string, { x: number[]; y: number[] }>; timeline: { t: number[] } }[];
    };
    expect(parsed.runs.map((r) => r.label)).toEqual(['open', 'closed-c4']);
    const ttft = parsed.runs[0]!.cdf['ttftMs']!;
    const expected = report.runs[0]!.requests.flatMap((r) => (r.ttftMs === null ? [] : [r.ttftMs])).sort((a, b) => a - b);
    expect(ttft.x).toEqual(expected);
    expect(ttft.y[ttft.y.length - 1]).toBe(1);
    expect(parsed.runs[0]!.timeline.t.length).toBeGreaterThan(0);
  });

  test("a run with the cluster's roles: the serving prefill and decode counts as steps, and a table of its moves", async () => {
    const page = await parse(html);
    const data = JSON.parse(page.scripts.find((s) => s.type === 'application/json')!.text) as {
      runs: { roles?: { t: number[]; prefill: number[]; decode: number[]; other: number[] }; timeline: { goodPerS: number[] } }[];
    };
    // 100 serving as prefill, then moving, then serving as decode; closed at the run's end (5 s).
    expect(data.runs[0]!.roles).toEqual({ t: [0, 1, 2, 5], prefill: [1, 0, 0, 0], decode: [1, 1, 2, 2], other: [0, 1, 0, 0] });
    expect(data.runs[1]!.roles).toBeUndefined();
    // 10 requests met the 60 ms TTFT, all sent within the first 2 s of 5.
    const binS = 5 / data.runs[0]!.timeline.goodPerS.length;
    expect(data.runs[0]!.timeline.goodPerS.reduce((a, b) => a + b, 0) * binS).toBeCloseTo(10, 6);
    expect(html).toContain('1 move(s) between roles ended during the run.');
    expect(html).toContain('<tr><td>100</td><td>prefill → decode</td><td>planner</td><td>0.9</td><td>2.0</td><td>done</td></tr>');
    expect(html).toContain("'serving decode'");
  });

  test("beside: references the library's two files in its directory and carries no copy of it", async () => {
    const page = await parse(renderHtml(report, { chartLibrary: 'beside' }));
    expect(page.urlAttributes).toEqual([`href=${CHART_LIBRARY_FILES.style}`, `src=${CHART_LIBRARY_FILES.script}`]);
    const library = chartLibrary();
    expect(page.scripts.some((s) => s.text.includes(library.script.slice(0, 200)))).toBe(false);
    expect(page.styles.some((s) => s.includes(library.style))).toBe(false);
  });

  test('writeChartLibrary writes the two files once, identical to the inline copy', () => {
    const dir = mkdtempSync(join(tmpdir(), 'pdlink-chart-'));
    try {
      writeChartLibrary(dir);
      const library = chartLibrary();
      expect(readFileSync(join(dir, CHART_LIBRARY_FILES.script), 'utf8')).toBe(library.script);
      expect(readFileSync(join(dir, CHART_LIBRARY_FILES.style), 'utf8')).toBe(library.style);
      const written = statSync(join(dir, CHART_LIBRARY_FILES.script)).mtimeMs;
      writeChartLibrary(dir);
      expect(statSync(join(dir, CHART_LIBRARY_FILES.script)).mtimeMs).toBe(written);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test('escapes what the report quotes: a hostile URL or source cannot open an element', () => {
    const hostile = { ...report, target: { ...report.target, baseUrl: 'http://h/<script>alert(1)</script>' } };
    const page = renderHtml(hostile);
    expect(page).not.toContain('<script>alert(1)');
    expect(page).toContain('&#60;script&#62;');
  });
});
