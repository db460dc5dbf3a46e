import { describe, expect, test } from 'bun:test';
import { exampleSnapshot, seedExample } from '../../test/doubles/refresh-examples.ts';
import type { RefreshInstance } from '../schema/refresh.ts';
import { HeldInstance } from './held-instance.ts';

/** Instances as a refresh body carries them, parsed from text as the route parses them. */
function wires(n = 4): RefreshInstance[] {
  return JSON.parse(JSON.stringify(exampleSnapshot(n))).instances;
}

describe('HeldInstance', () => {
  test('without its wire object, rebuilds it as it came: same keys, same order, same values', () => {
    for (const wire of [...wires(), ...seedExample().instances] as RefreshInstance[]) {
      const held = HeldInstance.of(wire, undefined, false);
      expect(JSON.stringify(held.wire)).toBe(JSON.stringify(wire));
      expect(held.wire).toBe(held.wire); // rebuilt once, then kept
      expect(held.peers).toBe(wire.dynamic_info.peers ?? held.peers);
    }
  });

  test('absent and empty peers stay distinct in the rebuilt object', () => {
    const absent = seedExample().instances[0] as RefreshInstance;
    expect(absent.dynamic_info.peers).toBeUndefined();
    expect(HeldInstance.of(absent, undefined, false).wire.dynamic_info).not.toHaveProperty('peers');
    const empty = { ...absent, dynamic_info: { ...absent.dynamic_info, peers: [] } } as RefreshInstance;
    const held = HeldInstance.of(empty, undefined, false);
    expect(held.wire.dynamic_info).toEqual({ avail_slots_num: 200, avail_block_num: 1024, peers: [] });
    expect(held.sameAs(absent)).toBe(false);
    expect(HeldInstance.of(absent, undefined, false).sameAs(empty)).toBe(false);
  });

  test('keeps the wire object when asked to', () => {
    const wire = wires(1)[0]!;
    expect(HeldInstance.of(wire, undefined, true).wire).toBe(wire);
  });

  test('takes equal strings and peer lists from the instance it replaces, and new ones when they differ', () => {
    const [a] = wires(4);
    const before = HeldInstance.of(a!, undefined, false);
    const [again] = wires(4);
    const after = HeldInstance.of(again!, before, false);
    expect(after.ip).toBe(before.ip);
    expect(after.peers).toBe(before.peers);
    expect(after.modelName).toBe(before.modelName);
    const moved = { ...again!, ip: '10.9.9.9', dynamic_info: { ...again!.dynamic_info, peers: [3, 2] } } as RefreshInstance;
    const changed = HeldInstance.of(moved, before, false);
    expect(changed.ip).toBe('10.9.9.9');
    expect(changed.peers).toEqual([3, 2]);
    expect(JSON.stringify(changed.wire)).toBe(JSON.stringify(moved));
  });

  test('sameAs tells every field apart, and equal copies alike', () => {
    const wire = wires(4)[2]!;
    const held = HeldInstance.of(wire, undefined, false);
    expect(held.sameAs(wires(4)[2]!)).toBe(true);
    const edits: ((w: any) => void)[] = [
      (w) => (w.id = 9),
      (w) => (w.ip = '10.0.0.9'),
      (w) => (w.port = '1027'),
      (w) => (w.metric_port = '1027'),
      (w) => (w.model_name = 'other'),
      ...['group_id', 'max_seq_len', 'max_output_len', 'total_slots_num', 'total_block_num', 'block_size', 'label', 'role'].map(
        (key) => (w: any) => (w.static_info[key] += 1),
      ),
      (w) => (w.dynamic_info.avail_slots_num -= 1),
      (w) => (w.dynamic_info.avail_block_num -= 1),
      (w) => w.dynamic_info.peers.reverse(),
      (w) => w.dynamic_info.peers.pop(),
      (w) => delete w.dynamic_info.peers,
    ];
    for (const edit of edits) {
      const other = wires(4)[2]!;
      edit(other);
      expect(held.sameAs(other)).toBe(false);
    }
  });

  test('isAt compares the address as the wire writes it', () => {
    const held = HeldInstance.of(wires(1)[0]!, undefined, false);
    expect(held.isAt('10.0.0.0', '1025')).toBe(true);
    expect(held.isAt('10.0.0.0', '1026')).toBe(false);
    expect(held.isAt('10.0.0.1', '1025')).toBe(false);
  });
});
