import { describe, expect, test } from 'bun:test';
import fc from 'fast-check';
import { type ExampleBody, exampleSnapshot, SEED_REFRESH_BODY, seedExample } from '../../test/doubles/refresh-examples.ts';
import { isValidSnapshot } from './refresh-fast.ts';
import { LoadsTemplate } from './refresh-loads.ts';
import { isPlainSnapshot, parseRefreshText } from './refresh-plain.ts';
import type { RefreshSnapshot } from './refresh.ts';

/** The template of a text the refresh route accepted as plain (the only texts it makes them of). */
function templateOf(text: string): LoadsTemplate | undefined {
  const snapshot = parseRefreshText(text);
  expect(isPlainSnapshot(snapshot)).toBe(true);
  return LoadsTemplate.of(text, snapshot as RefreshSnapshot);
}

/** Each instance's free slots and blocks, in the layout `read` answers with. */
function loadsOf(body: ExampleBody): number[] {
  return body.instances.flatMap((i) => [i.dynamic_info.avail_slots_num, i.dynamic_info.avail_block_num]);
}

/** `body` with each instance's loads moved by `by` (kept within their totals). */
function moved(body: ExampleBody, by: number): ExampleBody {
  const copy = structuredClone(body);
  for (const i of copy.instances) {
    i.dynamic_info.avail_slots_num = (i.dynamic_info.avail_slots_num + by) % (i.static_info.total_slots_num + 1);
    i.dynamic_info.avail_block_num = (i.dynamic_info.avail_block_num + 3 * by) % (i.static_info.total_block_num + 1);
  }
  return copy;
}

const compact = (body: unknown) => JSON.stringify(body);
const pretty = (body: unknown) => JSON.stringify(body, null, 2);

describe('LoadsTemplate.of', () => {
  test('locates every load of a plain snapshot, compact, pretty or as the seed writes it', () => {
    const cases: [string, ExampleBody][] = [
      [SEED_REFRESH_BODY, seedExample()],
      [compact(exampleSnapshot(64)), exampleSnapshot(64)],
      [pretty(exampleSnapshot(5)), exampleSnapshot(5)],
      [compact({ ids: [], instances: [] }), { ids: [], instances: [] }],
    ];
    for (const [text, body] of cases) {
      const template = templateOf(text)!;
      expect(template.instances).toBe(body.instances.length);
      expect([...template.read(text)!]).toEqual(loadsOf(body));
    }
  });

  test('a string value spelled like a load key is not a load', () => {
    const body = exampleSnapshot(2);
    body.instances[0]!.model_name = 'avail_slots_num';
    body.instances[1]!.model_name = '"avail_block_num":1';
    const text = compact(body).replace('"model_name":"\\"avail_block_num\\":1"', '"model_name":"avail_block_num:1"');
    const template = templateOf(text)!;
    expect([...template.read(text)!]).toEqual(loadsOf(JSON.parse(text) as ExampleBody));
  });

  test('is not made when the loads cannot be located exactly, and the reason is each time the text', () => {
    const body = exampleSnapshot(2);
    const text = compact(body);
    const refused: [string, string][] = [
      // Any backslash: a key could be written with escapes.
      ['an escape in a value', text.replace('"example-model"', '"example\\u002dmodel"')],
      ['a load written as 200.0', text.replace('"avail_slots_num":200', '"avail_slots_num":200.0')],
      ['a load written as 2e2', text.replace('"avail_slots_num":200', '"avail_slots_num":2e2')],
      // The first object is shadowed by the second: JSON.parse keeps the last, and its loads are counted twice.
      [
        'a shadowed dynamic_info',
        text.replace('"dynamic_info":{', '"dynamic_info":{"avail_slots_num":7,"avail_block_num":7},"dynamic_info":{'),
      ],
      ['a load key repeated in its object', text.replace('"avail_slots_num":200,', '"avail_slots_num":9,"avail_slots_num":200,')],
    ];
    for (const [why, bad] of refused) {
      const snapshot = JSON.parse(bad) as RefreshSnapshot;
      expect([why, isValidSnapshot(snapshot)]).toEqual([why, true]);
      expect([why, LoadsTemplate.of(bad, snapshot)]).toEqual([why, undefined]);
    }
    // A snapshot other than the one the text parses to (the values are compared as they are located).
    expect(LoadsTemplate.of(text, JSON.parse(compact(moved(body, 1))) as RefreshSnapshot)).toBeUndefined();
    expect(LoadsTemplate.of(text, JSON.parse(compact(exampleSnapshot(3))) as RefreshSnapshot)).toBeUndefined();
  });
});

describe('LoadsTemplate.read', () => {
  const body = exampleSnapshot(40);
  const text = compact(body);
  const template = templateOf(text)!;

  test('reads the loads of the same text with only loads changed, whatever their number of digits', () => {
    for (const by of [1, 7, 150, 999]) {
      const next = moved(body, by);
      expect([...template.read(compact(next))!]).toEqual(loadsOf(next));
    }
    const zeros = structuredClone(body);
    for (const i of zeros.instances) i.dynamic_info = { ...i.dynamic_info, avail_slots_num: 0, avail_block_num: 0 };
    expect([...template.read(compact(zeros))!]).toEqual(loadsOf(zeros));
    const full = structuredClone(body);
    for (const i of full.instances) i.dynamic_info.avail_block_num = i.static_info.total_block_num;
    expect([...template.read(compact(full))!]).toEqual(loadsOf(full));
  });

  test('refuses any other change, and any load a plain integer within its total would not be', () => {
    const other = (edit: (b: ExampleBody) => void) => {
      const copy = structuredClone(body);
      edit(copy);
      return compact(copy);
    };
    const first = '"avail_slots_num":200';
    const refused: [string, string][] = [
      ['a model name', other((b) => (b.instances[3]!.model_name = 'other'))],
      ['a total', other((b) => (b.instances[3]!.static_info.total_slots_num = 199))],
      ['a peer', other((b) => b.instances[20]!.dynamic_info.peers.pop())],
      ['an instance fewer', other((b) => (b.instances.pop(), b.ids.pop()))],
      ['whitespace', pretty(body)],
      ['a byte more at the end', `${text} `],
      ['a byte less at the end', text.slice(0, -1)],
      ['the empty text', ''],
      ['a load above its total', text.replace(first, '"avail_slots_num":201')],
      ['a load of eleven digits', text.replace(first, '"avail_slots_num":20000000000')],
      ['a leading zero', text.replace(first, '"avail_slots_num":0200')],
      ['a negative load', text.replace(first, '"avail_slots_num":-2')],
      ['a fraction', text.replace(first, '"avail_slots_num":2.5')],
      ['200.0', text.replace(first, '"avail_slots_num":200.0')],
      ['an exponent', text.replace(first, '"avail_slots_num":2e2')],
      ['a string', text.replace(first, '"avail_slots_num":"200"')],
      ['nothing', text.replace(first, '"avail_slots_num":,')],
    ];
    for (const [why, bad] of refused) {
      expect(bad).not.toBe(text);
      expect([why, template.read(bad)]).toEqual([why, undefined]);
    }
  });

  test('whatever it reads, the text parses to the template snapshot with those loads: a valid one', () => {
    // Random edits of a changed text: insertions, deletions and replacements of characters a JSON
    // text is made of, anywhere. When read answers, the parse must agree with it.
    const base = compact(moved(body, 5));
    const alphabet = '0123456789-+.eE ,:{}[]"\\a';
    const edit = fc.record({
      at: fc.nat({ max: base.length }),
      cut: fc.nat({ max: 3 }),
      put: fc.string({ unit: fc.constantFrom(...alphabet), maxLength: 3 }),
    });
    fc.assert(
      fc.property(fc.array(edit, { minLength: 1, maxLength: 3 }), (edits) => {
        let candidate = base;
        for (const { at, cut, put } of edits) candidate = candidate.slice(0, at) + put + candidate.slice(at + cut);
        const loads = template.read(candidate);
        if (loads === undefined) return;
        const parsed = JSON.parse(candidate) as ExampleBody;
        expect(isValidSnapshot(parsed)).toBe(true);
        const expected = structuredClone(body);
        expected.instances.forEach((instance, i) => {
          instance.dynamic_info.avail_slots_num = loads[2 * i];
          instance.dynamic_info.avail_block_num = loads[2 * i + 1];
        });
        expect(parsed).toEqual(expected);
      }),
      { numRuns: 3000 },
    );
  });

  test('a read digit run edited to any other run of digits reads as that number, or is refused', () => {
    fc.assert(
      fc.property(fc.nat({ max: 79 }), fc.stringMatching(/^[0-9]{1,12}$/), (k, digits) => {
        // The k-th load of the text, replaced by `digits`.
        let at = -1;
        for (let i = 0; i <= k >> 1; i++) at = text.indexOf((k & 1) === 0 ? '"avail_slots_num":' : '"avail_block_num":', at + 1);
        const start = text.indexOf(':', at) + 1;
        let stop = start;
        while (/[0-9]/.test(text[stop]!)) stop++;
        const candidate = text.slice(0, start) + digits + text.slice(stop);
        const loads = template.read(candidate);
        const value = Number(digits);
        const total = (k & 1) === 0 ? 200 : 1024;
        const valid = (digits === '0' || !digits.startsWith('0')) && value <= total;
        expect(loads !== undefined).toBe(valid);
        if (loads !== undefined) expect(loads[k]).toBe(value);
      }),
      { numRuns: 2000 },
    );
  });
});
