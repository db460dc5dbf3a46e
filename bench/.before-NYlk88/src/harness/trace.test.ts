import { describe, expect, test } from 'bun:test';
import { parseTrace } from './trace.ts';

const TRACE = [
  '{"timestamp": 1000, "input_length": 1024, "output_length": 100, "hash_ids": [1, 2]}',
  '{"timestamp": 3000, "input_length": 700, "output_length": 10, "hash_ids": [1, 3]}',
  '',
  '{"timestamp": 5000, "input_length": 512, "output_length": 1, "hash_ids": [4]}',
].join('\n');

describe('parseTrace', () => {
  test('scales arrival times from the first request, and lengths, keeping the hashes', () => {
    const w = parseTrace(TRACE, 't.jsonl', { timeScale: 0.5, lengthScale: 0.25, outputScale: 0.1, maxRequests: 10 });
    expect(w.blockTokens).toBe(128);
    expect(w.items.map((i) => i.arrivalMs)).toEqual([0, 1000, 2000]);
    expect(w.items.map((i) => i.inputTokens)).toEqual([256, 175, 128]);
    // Never below one token.
    expect(w.items.map((i) => i.outputTokens)).toEqual([10, 1, 1]);
    expect(w.items[1]!.hashIds).toEqual([1, 3]);
  });

  test('stops at maxRequests', () => {
    expect(parseTrace(TRACE, 't', { timeScale: 1, lengthScale: 1, outputScale: 1, maxRequests: 2 }).items).toHaveLength(2);
  });

  test('a bad line is named with its field', () => {
    const scaling = { timeScale: 1, lengthScale: 1, outputScale: 1, maxRequests: 10 };
    expect(() => parseTrace('{"timestamp": 0, "input_length": "x", "output_length": 1, "hash_ids": []}', 't', scaling)).toThrow(
      'line 1: input_length must be a number ≥ 1, got "x"',
    );
    expect(() => parseTrace('{"timestamp": 0, "input_length": 1, "output_length": 1}', 't', scaling)).toThrow(
      'line 1: hash_ids must be an array of integers',
    );
    expect(() => parseTrace('nope', 't', scaling)).toThrow('line 1: not JSON');
    expect(() => parseTrace('\n', 't', scaling)).toThrow('no requests');
  });
});
