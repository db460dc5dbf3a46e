import { describe, expect, test } from 'bun:test';
import { parseJsonExact, UnsafeInteger } from '../../core/exact-json.ts';
import { batchSize, bootstrapPortOf, freshRoom, newBootstrap, withBootstrap } from './bootstrap.ts';

describe('bootstrap fields', () => {
  test('a room is a non-negative 63-bit integer, fresh each time', () => {
    const rooms = new Set<bigint>();
    for (let i = 0; i < 1000; i++) {
      const room = freshRoom();
      expect(room >= 0n && room < 2n ** 63n).toBe(true);
      rooms.add(room);
    }
    expect(rooms.size).toBe(1000);
  });

  test('one request gets the three scalar fields, written as exact JSON integers', () => {
    const boot = newBootstrap({ prompt: 'hi' }, '10.0.0.5', 8998);
    const text = JSON.stringify(withBootstrap({ model: 'm', prompt: 'hi' }, boot));
    const sent = parseJsonExact(text) as Record<string, unknown>;
    expect(sent['bootstrap_host']).toBe('10.0.0.5');
    expect(sent['bootstrap_port']).toBe(8998);
    const room = sent['bootstrap_room'];
    const digits = room instanceof UnsafeInteger ? room.source : String(room);
    expect(BigInt(digits)).toBe(boot.rooms[0]!);
    expect(sent['prompt']).toBe('hi');
  });

  test('a batched prompt gets arrays of the three fields, one distinct room per item', () => {
    for (const body of [{ text: ['a', 'b', 'c'] }, { input_ids: [[1, 2], [3], [4]] }, { prompt: ['a', 'b', 'c'] }]) {
      const boot = newBootstrap(body, 'p', 9000);
      const sent = withBootstrap(body, boot);
      expect(sent['bootstrap_host']).toEqual(['p', 'p', 'p']);
      expect(sent['bootstrap_port']).toEqual([9000, 9000, 9000]);
      expect((sent['bootstrap_room'] as unknown[]).length).toBe(3);
      expect(new Set(boot.rooms).size).toBe(3);
    }
  });

  test('a single tokenised prompt is not a batch', () => {
    expect(batchSize({ input_ids: [1, 2, 3] })).toBeUndefined();
    expect(batchSize({ prompt: [1, 2, 3] })).toBeUndefined();
    expect(batchSize({ prompt: 'x' })).toBeUndefined();
    expect(batchSize({ prompt: [[1], [2]] })).toBe(2);
  });

  test("the client's own bootstrap fields are replaced", () => {
    const sent = withBootstrap({ bootstrap_host: 'evil', bootstrap_port: 1, bootstrap_room: 7 }, newBootstrap({}, 'p', 8998));
    expect(sent['bootstrap_host']).toBe('p');
    expect(sent['bootstrap_port']).toBe(8998);
  });

  test("P's own bootstrap_port from its refresh entry wins over the configured one", () => {
    expect(bootstrapPortOf({ wire: { bootstrap_port: 9100 } }, 8998)).toBe(9100);
    expect(bootstrapPortOf({ wire: {} }, 8998)).toBe(8998);
    expect(bootstrapPortOf({ wire: { bootstrap_port: 'x' } }, 8998)).toBe(8998);
    expect(bootstrapPortOf({ wire: { bootstrap_port: 70000 } }, 8998)).toBe(8998);
  });
});
