import { describe, expect, test } from 'bun:test';
import { ENGINE_IDLE_CODE, withIdleTimeout } from './idle.ts';

/** A response whose body chunks the test pushes, and the signal the send saw. */
function controlled() {
  let push!: ReadableStreamDefaultController<Uint8Array>;
  const body = new ReadableStream<Uint8Array>({ start: (c) => void (push = c) });
  let seen: AbortSignal | undefined;
  const send = async (signal: AbortSignal) => {
    seen = signal;
    return new Response(body, { status: 200 });
  };
  return { send, push: () => push, signal: () => seen };
}

async function rejection(promise: Promise<unknown>): Promise<{ code?: string; message: string }> {
  try {
    await promise;
  } catch (err) {
    return err as { code?: string; message: string };
  }
  throw new Error('expected a rejection');
}

describe('withIdleTimeout', () => {
  test('no head within the timeout: the send is aborted and fails with ETIMEDOUT naming the setting', async () => {
    let seen: AbortSignal | undefined;
    const send = (signal: AbortSignal) =>
      new Promise<Response>((_, reject) => {
        seen = signal;
        signal.addEventListener('abort', () => reject(new Error('aborted')));
      });
    const err = await rejection(withIdleTimeout(send, new AbortController().signal, 20));
    expect(err.code).toBe(ENGINE_IDLE_CODE);
    expect(err.message).toContain('http_timeout_seconds');
    expect(seen?.aborted).toBe(true);
  });

  test('chunks keep it alive; silence after a chunk fails the body read', async () => {
    const c = controlled();
    const res = await withIdleTimeout(c.send, new AbortController().signal, 30);
    const reader = res.body!.getReader();
    c.push().enqueue(new Uint8Array([1]));
    expect((await reader.read()).value).toEqual(new Uint8Array([1]));
    const err = await rejection(reader.read());
    expect(err.code).toBe(ENGINE_IDLE_CODE);
    expect(c.signal()?.aborted).toBe(true);
  });

  test('a body that ends in time is read whole and leaves nothing armed', async () => {
    const c = controlled();
    const res = await withIdleTimeout(c.send, new AbortController().signal, 60_000);
    c.push().enqueue(new TextEncoder().encode('done'));
    c.push().close();
    expect(await res.text()).toBe('done');
    expect(c.signal()?.aborted).toBe(false);
  });

  test('the caller’s abort reaches the send; Infinity sends as it is', async () => {
    const parent = new AbortController();
    const c = controlled();
    await withIdleTimeout(c.send, parent.signal, 60_000);
    parent.abort('client_abort');
    expect(c.signal()?.reason).toBe('client_abort');
    const plain = controlled();
    await withIdleTimeout(plain.send, parent.signal, Infinity);
    expect(plain.signal()).toBe(parent.signal);
  });
});
