/**
 * The one import direction of `src/` (DESIGN §3), checked on every test run: a module may import from its
 * own folder or from a folder on a lower floor, never upward or sideways; only `workers/` opens the FFI;
 * the bottom rooms (`platform/`, `net/`, `web/`, `zmtp/`, `ffi/`, `kv/`) stand on `core/` alone and `schema/` on `core/` and `net/`;
 * `core/` imports nothing of pdlink; only `cli/` starts the simulator and the bench harness; nothing in `src/` reaches
 * into `test/`; and no two files import each other, even for types, by any path. Besides, the platform
 * (Bun or Deno) is named only by `platform/`, `ffi/` and the simulator's process launcher.
 */
import { describe, expect, test } from 'bun:test';
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, normalize, relative } from 'node:path';

const SRC = join(import.meta.dir, '..', 'src');

/** Floors, top to bottom; a unit may import from floors below its own. Root files are units of their own. */
const FLOORS: readonly (readonly string[])[] = [
  ['main.ts'],
  ['cli', 'index.ts'],
  ['apps', 'config'],
  ['http'],
  ['proxy', 'agent', 'controller', 'sim', 'harness'],
  ['scheduler', 'ledger', 'links', 'workers', 'store', 'admission', 'kv-events', 'tokenizer'],
  ['cluster', 'schema', 'ffi', 'kv'],
  ['platform', 'zmtp', 'net', 'web'],
  ['core'],
];

/** Sideways imports on one floor that the design allows (a few domain folders lean on a neighbour's types). */
const SIDEWAYS: ReadonlySet<string> = new Set(['cli>index.ts', 'cluster>schema', 'scheduler>ledger', 'apps>config', 'workers>links']);

/** Folders that only some units may import, and the units that may. */
const ONLY_FROM: Readonly<Record<string, readonly string[]>> = {
  ffi: ['workers'],
  sim: ['cli'],
  harness: ['cli'],
};

/** Folders whose imports are limited to the listed units (besides their own). */
const STANDS_ON: Readonly<Record<string, readonly string[]>> = {
  core: [],
  schema: ['core', 'net'],
  ffi: ['core'],
  kv: ['core'],
  zmtp: ['core'],
  platform: ['core'],
  net: ['core'],
  web: ['core'],
};

function unitOf(file: string): string {
  const rel = relative(SRC, file);
  const first = rel.split('/')[0] ?? rel;
  return rel.includes('/') ? first : rel;
}

function floorOf(unit: string): number {
  const floor = FLOORS.findIndex((units) => units.includes(unit));
  return floor;
}

function sourceFiles(dir: string): string[] {
  const out: string[] = [];
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) out.push(...sourceFiles(path));
    else if (entry.name.endsWith('.ts') && !entry.name.endsWith('.test.ts')) out.push(path);
  }
  return out;
}

/** Every relative module specifier of a file: static, type-only, re-exports and dynamic imports. */
function specifiers(text: string): string[] {
  const found: string[] = [];
  const patterns = [/(?:^|\n)\s*(?:import|export)\s[^;'"]*?from\s+['"]([^'"]+)['"]/g, /import\(\s*['"]([^'"]+)['"]\s*\)/g];
  for (const re of patterns) for (const match of text.matchAll(re)) found.push(match[1]!);
  return found.filter((spec) => spec.startsWith('.'));
}

interface Edge {
  from: string;
  to: string;
}

function edges(): Edge[] {
  const out: Edge[] = [];
  for (const file of sourceFiles(SRC)) {
    for (const spec of specifiers(readFileSync(file, 'utf8'))) {
      out.push({ from: file, to: normalize(join(dirname(file), spec)) });
    }
  }
  return out;
}

/** Why one edge breaks the direction, or undefined when it is allowed. */
export function violation(from: string, to: string): string | undefined {
  if (!to.startsWith(SRC + '/')) return 'imports from outside src/';
  const a = unitOf(from);
  const b = unitOf(to);
  if (a === b) return undefined;
  const only = ONLY_FROM[b];
  if (only !== undefined && !only.includes(a)) return `only ${only.join(', ')} may import ${b}/`;
  const base = STANDS_ON[a];
  if (base !== undefined && !base.includes(b)) return `${a}/ stands on ${base.length === 0 ? 'nothing of pdlink' : base.join(', ')}`;
  const fa = floorOf(a);
  const fb = floorOf(b);
  if (fa < 0) return `${a} is on no floor of the design`;
  if (fb < 0) return `${b} is on no floor of the design`;
  if (fa === fb) return SIDEWAYS.has(`${a}>${b}`) ? undefined : `sideways: ${a} and ${b} share a floor`;
  return fb > fa ? undefined : `upward: ${b} is above ${a}`;
}

/** Strongly connected components with more than one file (Tarjan), each sorted. */
function circles(all: Edge[]): string[][] {
  const next = new Map<string, string[]>();
  for (const { from, to } of all) {
    const list = next.get(from) ?? [];
    list.push(to);
    next.set(from, list);
  }
  let index = 0;
  const idx = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const on = new Set<string>();
  const out: string[][] = [];
  const visit = (v: string): void => {
    idx.set(v, index);
    low.set(v, index);
    index++;
    stack.push(v);
    on.add(v);
    for (const w of next.get(v) ?? []) {
      if (!idx.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (on.has(w)) low.set(v, Math.min(low.get(v)!, idx.get(w)!));
    }
    if (low.get(v) === idx.get(v)) {
      const scc: string[] = [];
      let w: string;
      do {
        w = stack.pop()!;
        on.delete(w);
        scc.push(w);
      } while (w !== v);
      if (scc.length > 1) out.push(scc.map((f) => relative(SRC, f)).sort());
    }
  };
  for (const v of next.keys()) if (!idx.has(v)) visit(v);
  return out;
}

describe('the import direction of src/', () => {
  const all = edges();

  test('there are imports to check', () => {
    expect(all.length).toBeGreaterThan(100);
  });

  test('every import runs down the floors of the design', () => {
    const bad = all
      .map(({ from, to }) => ({ from, to, why: violation(from, to) }))
      .filter((e) => e.why !== undefined)
      .map((e) => `${relative(SRC, e.from)} -> ${relative(SRC, e.to)}: ${e.why}`);
    expect(bad).toEqual([]);
  });

  test('no circles, type-only imports included', () => {
    expect(circles(all)).toEqual([]);
  });

  test('the rules themselves refuse what they should', () => {
    const f = (p: string): string => join(SRC, p);
    expect(violation(f('links/manager.ts'), f('http/envelope.ts'))).toContain('upward');
    expect(violation(f('proxy/a.ts'), f('ffi/library.ts'))).toContain('only workers');
    expect(violation(f('http/a.ts'), f('sim/engine/engine.ts'))).toContain('only cli');
    expect(violation(f('schema/role.ts'), f('cluster/instance.ts'))).toContain('stands on core');
    expect(violation(f('core/errors.ts'), f('cluster/instance.ts'))).toContain('nothing of pdlink');
    expect(violation(f('proxy/a.ts'), f('agent/b.ts'))).toContain('sideways');
    expect(violation(f('proxy/a.ts'), join(SRC, '..', 'test', 'doubles', 'x.ts'))).toContain('outside src/');
    expect(violation(f('http/a.ts'), f('proxy/b.ts'))).toBeUndefined();
    expect(violation(f('workers/a.ts'), f('ffi/b.ts'))).toBeUndefined();
    expect(violation(f('http/a.ts'), f('platform/index.ts'))).toBeUndefined();
    expect(violation(f('platform/bun.ts'), f('core/errors.ts'))).toBeUndefined();
    expect(violation(f('platform/deno.ts'), f('cluster/instance.ts'))).toContain('stands on core');
    expect(violation(f('core/errors.ts'), f('platform/index.ts'))).toContain('nothing of pdlink');
  });
});

/** Where naming the platform is the point: the seam, the FFI, and the simulator's process launcher. */
const PLATFORM_SPECIFIC: readonly string[] = ['platform/', 'ffi/', 'sim/cluster/cluster-spawn.ts', 'sim/cluster/process.ts'];

/** Bun's and Deno's globals and Bun's built-in modules. */
const RUNTIME_NAMES = /\bBun\.|\bDeno\b|\bbun:/g;

/** The text with its comments blanked (strings kept, so `'http://x'` is not a comment), lines preserved. */
export function withoutComments(text: string): string {
  let out = '';
  let i = 0;
  while (i < text.length) {
    const c = text[i]!;
    const next = text[i + 1];
    if (c === '/' && next === '/') {
      while (i < text.length && text[i] !== '\n') i++;
    } else if (c === '/' && next === '*') {
      const end = text.indexOf('*/', i + 2);
      const stop = end < 0 ? text.length : end + 2;
      out += text.slice(i, stop).replace(/[^\n]/g, ' ');
      i = stop;
    } else if (c === "'" || c === '"' || c === '`') {
      let j = i + 1;
      while (j < text.length && text[j] !== c) j += text[j] === '\\' ? 2 : 1;
      out += text.slice(i, j + 1);
      i = j + 1;
    } else {
      out += c;
      i++;
    }
  }
  return out;
}

/** Each use of a platform's name in `text` outside comments, as `line: excerpt`. */
export function platformMentions(text: string): string[] {
  const found: string[] = [];
  withoutComments(text)
    .split('\n')
    .forEach((line, n) => {
      if (line.match(RUNTIME_NAMES) !== null) found.push(`${n + 1}: ${line.trim()}`);
    });
  return found;
}

describe('the platform is named only by the seam', () => {
  test('no Bun. / Deno / bun: in src/ outside platform/, ffi/ and the simulator launcher', () => {
    const bad: string[] = [];
    for (const file of sourceFiles(SRC)) {
      const rel = relative(SRC, file);
      if (PLATFORM_SPECIFIC.some((allowed) => rel === allowed || (allowed.endsWith('/') && rel.startsWith(allowed)))) continue;
      for (const mention of platformMentions(readFileSync(file, 'utf8'))) bad.push(`${rel}:${mention}`);
    }
    expect(bad).toEqual([]);
  });

  test('the check sees code and skips comments', () => {
    expect(platformMentions('const s = Bun.serve({});')).toEqual(['1: const s = Bun.serve({});']);
    expect(platformMentions("import { dlopen } from 'bun:ffi';")).toHaveLength(1);
    expect(platformMentions('if (typeof Deno !== "undefined") x();')).toHaveLength(1);
    expect(platformMentions('const url = "http://h/"; Deno.exit(1);')).toHaveLength(1);
    expect(platformMentions('// Bun.serve here\n/* Deno.serve\n there */ const a = 1;')).toEqual([]);
    expect(platformMentions("const bundle = 'Bunny'; const d = 'Denote';")).toEqual([]);
  });
});
