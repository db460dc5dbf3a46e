import { describe, expect, test } from 'bun:test';
import { BootstrapRooms } from './rooms.ts';

describe('bootstrap rooms', () => {
  test('a decoder that asks first waits until the prefiller files the room', async () => {
    const rooms = new BootstrapRooms();
    const waiting = rooms.wait('7', 60_000, new AbortController().signal);
    void rooms.fill('7', { remote_request_id: 'r#1' }, 'r#1');
    expect(await waiting).toEqual({ remote_request_id: 'r#1' });
    // Filed rooms answer at once.
    expect(await rooms.wait('7', 1, new AbortController().signal)).toEqual({ remote_request_id: 'r#1' });
  });

  test("the prefiller's leg ends when the decoder releases the blocks", async () => {
    const rooms = new BootstrapRooms();
    let taken = false;
    const handedOver = rooms.fill('8', {}, 'r#2').then(() => (taken = true));
    rooms.released('other');
    await Promise.resolve();
    expect(taken).toBe(false);
    rooms.released('r#2');
    await handedOver;
    expect(taken).toBe(true);
  });

  test('a room never filed: undefined when the wait is aborted or runs out', async () => {
    const rooms = new BootstrapRooms();
    const abort = new AbortController();
    const waiting = rooms.wait('9', 60_000, abort.signal);
    abort.abort();
    expect(await waiting).toBeUndefined();
    expect(await rooms.wait('10', 1, new AbortController().signal)).toBeUndefined();
  });
});
