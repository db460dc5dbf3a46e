import { describe, expect, test } from 'bun:test';
import * as v from 'valibot';
import { errors, PdlinkError } from '../core/errors.ts';
import { parseOrRefuse } from './issues.ts';

const Section = v.object({ a: v.number('must be a number'), b: v.optional(v.object({ c: v.string('must be a string') })) });

function refusal(fn: () => unknown): PdlinkError {
  try {
    fn();
  } catch (err) {
    if (err instanceof PdlinkError) return err;
    throw err;
  }
  throw new Error('expected a refusal');
}

describe('parseOrRefuse', () => {
  test('returns the output of a value that passes', () => {
    expect(parseOrRefuse(Section, { a: 1 }, errors.unprocessable)).toEqual({ a: 1 });
  });

  test('throws the caller’s error with every issue, not just the first', () => {
    const err = refusal(() => parseOrRefuse(Section, { a: 'x', b: { c: 1 } }, errors.unprocessable));
    expect(err.status).toBe(422);
    expect(err.issues).toEqual([
      { path: 'a', message: 'must be a number' },
      { path: 'b.c', message: 'must be a string' },
    ]);
    expect(refusal(() => parseOrRefuse(Section, {}, errors.invalidBody)).status).toBe(400);
  });

  test('at: paths are prefixed with where the value sits', () => {
    const err = refusal(() => parseOrRefuse(Section, { a: 'x' }, (issues) => errors.configInvalid(issues, 'f'), { at: 'proxy_config' }));
    expect(err.issues).toEqual([{ path: 'proxy_config.a', message: 'must be a number' }]);
  });

  test('object: anything but a JSON object is refused at the top', () => {
    for (const input of [[], null, 7, 'x']) {
      expect(refusal(() => parseOrRefuse(v.looseObject({}), input, errors.unprocessable, { object: true })).issues).toEqual([
        { path: '', message: 'must be a JSON object' },
      ]);
    }
  });
});
