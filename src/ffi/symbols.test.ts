import { describe, expect, test } from 'bun:test';
import { readFileSync } from 'node:fs';
import { CALL_SYMBOLS, SYMBOLS, type NativeType } from './symbols.ts';

const header = readFileSync(new URL('../../native/include/pdrt.h', import.meta.url), 'utf8');

const TABLE = { ...SYMBOLS, ...CALL_SYMBOLS };

/** The neutral type of one C parameter: an opaque handle, a callback, any other pointer, or a fixed-width integer. */
function neutral(param: string): NativeType | string {
  if (/^pdrt_(ctx|calls)\s*\*\s*\w+$/.test(param)) return 'ctx'; // not `pdrt_ctx **out`, a buffer the handle is written to
  if (/^pdrt_calls_done\s+\w+$/.test(param)) return 'fn';
  if (param.includes('*')) return 'buf';
  const scalar = { int32_t: 'i32', uint16_t: 'u16', uint32_t: 'u32', int64_t: 'i64', uint64_t: 'u64' }[param.split(/\s+/)[0]!];
  return scalar ?? `unmapped C type: ${param}`;
}

/** Every `int32_t pdrt_*(...)` prototype of pdrt.h, as neutral argument lists. */
function prototypes(): Record<string, string[]> {
  const out: Record<string, string[]> = {};
  for (const m of header.matchAll(/^int32_t (pdrt_\w+)\(([^)]*)\);/gm)) {
    const params = m[2]!.replace(/\s+/g, ' ').trim();
    out[m[1]!] = params === 'void' ? [] : params.split(',').map((p) => neutral(p.trim().replace(/^const /, '')));
  }
  return out;
}

describe('the one symbol table', () => {
  test('names every pdrt.h function with its arguments, in order: handles, callbacks, buffers and integer widths as the header has them', () => {
    const fromHeader = prototypes();
    expect(Object.keys(fromHeader).length).toBeGreaterThan(10);
    const fromTable: Record<string, string[]> = Object.fromEntries(Object.entries(TABLE).map(([name, spec]) => [name, [...spec.args]]));
    expect(fromTable).toEqual(fromHeader);
  });

  test("the optional call queue is the header's pdrt_calls_* functions, and only those", () => {
    expect(Object.keys(CALL_SYMBOLS).sort()).toEqual(
      Object.keys(prototypes())
        .filter((name) => name.startsWith('pdrt_calls_'))
        .sort(),
    );
  });

  test('a context handle is only ever the first argument (the Deno binding converts that one to a pointer)', () => {
    for (const [name, spec] of Object.entries(TABLE)) {
      expect([name, (spec.args as readonly NativeType[]).lastIndexOf('ctx')]).toEqual([
        name,
        name === 'pdrt_abi_version' || name === 'pdrt_create' || name === 'pdrt_calls_create' ? -1 : 0,
      ]);
    }
  });

  test('every function returns an int32 status', () => {
    expect(new Set(Object.values(TABLE).map((s) => s.returns))).toEqual(new Set(['i32']));
  });
});
