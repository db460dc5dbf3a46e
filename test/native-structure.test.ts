/**
 * The reference runtime's C files call each other one way: the context (ctx.c) owns its parts and
 * calls down into them; no part calls back up into a file that calls it, directly or around a
 * circle. Read from the built objects (`nm`: what each object defines and what it needs), so the
 * check sees real calls, not includes.
 */
import { describe, expect, test } from 'bun:test';
import { readdirSync } from 'node:fs';
import { join } from 'node:path';

const OBJ = join(import.meta.dir, '..', 'native', 'build', 'obj');

function symbols(object: string, flag: '--defined-only' | '--undefined-only'): string[] {
  const proc = Bun.spawnSync(['nm', flag, '-g', object], { stdout: 'pipe', stderr: 'pipe' });
  if (proc.exitCode !== 0) throw new Error(`nm ${object}: ${proc.stderr.toString()}`);
  return proc.stdout
    .toString()
    .split('\n')
    .map((line) => line.trim().split(/\s+/))
    .filter((parts) => (flag === '--defined-only' ? parts.length === 3 && parts[1] === 'T' : parts.length === 2 && parts[0] === 'U'))
    .map((parts) => parts[parts.length - 1]!);
}

/** File → the files whose functions it calls. */
function callGraph(): Map<string, Set<string>> {
  const objects = readdirSync(OBJ).filter((f) => f.endsWith('.o'));
  const owner = new Map<string, string>();
  for (const o of objects) for (const s of symbols(join(OBJ, o), '--defined-only')) owner.set(s, o.replace(/\.o$/, '.c'));
  const graph = new Map<string, Set<string>>();
  for (const o of objects) {
    const file = o.replace(/\.o$/, '.c');
    const callees = new Set<string>();
    for (const s of symbols(join(OBJ, o), '--undefined-only')) {
      const callee = owner.get(s);
      if (callee !== undefined && callee !== file) callees.add(callee);
    }
    graph.set(file, callees);
  }
  return graph;
}

/** Every circle of the graph, each as the files around it (Tarjan's strongly connected components). */
function circles(graph: Map<string, Set<string>>): string[][] {
  let index = 0;
  const stack: string[] = [];
  const on = new Set<string>();
  const idx = new Map<string, number>();
  const low = new Map<string, number>();
  const found: string[][] = [];
  const visit = (v: string): void => {
    idx.set(v, index);
    low.set(v, index++);
    stack.push(v);
    on.add(v);
    for (const w of graph.get(v) ?? []) {
      if (!idx.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (on.has(w)) low.set(v, Math.min(low.get(v)!, idx.get(w)!));
    }
    if (low.get(v) === idx.get(v)) {
      const component: string[] = [];
      let w: string;
      do {
        w = stack.pop()!;
        on.delete(w);
        component.push(w);
      } while (w !== v);
      if (component.length > 1) found.push(component.sort());
    }
  };
  for (const v of graph.keys()) if (!idx.has(v)) visit(v);
  return found;
}

describe('the reference runtime (native/src)', () => {
  const graph = callGraph();

  test('has no circle of calls between its files', () => {
    expect(circles(graph)).toEqual([]);
  });

  test('the context owns its parts: ctx.c is called by no part, and calls down into them', () => {
    const callers = [...graph].filter(([, callees]) => callees.has('ctx.c')).map(([file]) => file);
    expect(callers).toEqual([]);
    expect([...graph.get('ctx.c')!]).toEqual(expect.arrayContaining(['handle.c', 'iothread.c', 'links.c', 'serve.c', 'cache.c']));
  });

  test('the check sees a circle where there is one', () => {
    const looped = new Map([
      ['a.c', new Set(['b.c'])],
      ['b.c', new Set(['c.c'])],
      ['c.c', new Set(['a.c'])],
      ['d.c', new Set(['a.c'])],
    ]);
    expect(circles(looped)).toEqual([['a.c', 'b.c', 'c.c']]);
  });
});
