import { describe, expect, test } from 'bun:test';
import { seedExample } from '../../test/doubles/refresh-examples.ts';
import { knownFieldsEqual } from './known-fields.ts';
import { wireEqual } from './registry.ts';

type Wire = Record<string, any>;

/** Every way one known field of the seed's decode instance can differ, each as an edit. */
const EDITS: readonly [string, (w: Wire) => void][] = [
  ['id', (w) => (w.id = 7)],
  ['ip', (w) => (w.ip = '10.0.0.1')],
  ['port', (w) => (w.port = '1030')],
  ['metric_port', (w) => (w.metric_port = '1031')],
  ['model_name', (w) => (w.model_name = 'other')],
  ...['group_id', 'max_seq_len', 'max_output_len', 'total_slots_num', 'total_block_num', 'block_size', 'label', 'role'].map(
    (key): [string, (w: Wire) => void] => [`static_info.${key}`, (w) => (w.static_info[key] += 1)],
  ),
  ['avail_slots_num', (w) => (w.dynamic_info.avail_slots_num -= 1)],
  ['avail_block_num', (w) => (w.dynamic_info.avail_block_num -= 1)],
  ['peers added', (w) => w.dynamic_info.peers.push(3)],
  ['peers emptied', (w) => (w.dynamic_info.peers = [])],
  ['peers changed', (w) => (w.dynamic_info.peers = [2])],
  ['peers absent', (w) => delete w.dynamic_info.peers],
];

const decode = (): Wire => seedExample().instances[1]!;

describe('knownFieldsEqual', () => {
  test('equal copies are equal, as wireEqual says', () => {
    expect(knownFieldsEqual(decode(), decode())).toBe(true);
    expect(wireEqual(decode(), decode())).toBe(true);
  });

  for (const [name, edit] of EDITS) {
    test(`a different ${name} makes them differ, both ways, as wireEqual says`, () => {
      const a = decode();
      const b = decode();
      edit(b);
      expect(knownFieldsEqual(a, b)).toBe(false);
      expect(knownFieldsEqual(b, a)).toBe(false);
      expect(wireEqual(a, b)).toBe(false);
    });
  }

  test('peers in another order differ (the wire order is part of the object)', () => {
    const a = decode();
    const b = decode();
    a.dynamic_info.peers = [0, 2];
    b.dynamic_info.peers = [2, 0];
    expect(knownFieldsEqual(a, b)).toBe(false);
    expect(wireEqual(a, b)).toBe(false);
  });
});
