import { describe, expect, test } from 'bun:test';
import { ptr } from 'bun:ffi';
import { LlmStatusError } from '../core/llm-status.ts';
import { CONFIG_BYTES, packConfig } from './config.ts';

describe('packConfig', () => {
  test('writes the secret pointer and length, then the limits in pdrt_config order; absent fields stay 0', () => {
    const bytes = new Uint8Array(CONFIG_BYTES).fill(0xff);
    const secret = new TextEncoder().encode('0123456789abcdef-secret');
    packConfig(bytes, secret, { handshakeTimeoutMs: 1500, maxConns: 9 });
    const view = new DataView(bytes.buffer);
    expect(view.getBigUint64(0, true)).toBe(BigInt(ptr(secret)));
    expect(view.getUint32(8, true)).toBe(secret.length);
    expect(view.getUint32(12, true)).toBe(1500);
    expect(view.getUint32(40, true)).toBe(9);
    expect([16, 20, 24, 28, 32, 36, 44].map((o) => view.getUint32(o, true))).toEqual([0, 0, 0, 0, 0, 0, 0]);
  });

  test('no secret: null pointer and length 0', () => {
    const bytes = new Uint8Array(CONFIG_BYTES).fill(1);
    packConfig(bytes, undefined);
    expect([...bytes]).toEqual(new Array(CONFIG_BYTES).fill(0));
  });

  test('a secret of the wrong size or a limit out of range is refused naming the field', () => {
    const bytes = new Uint8Array(CONFIG_BYTES);
    expect(() => packConfig(bytes, new Uint8Array(15))).toThrow(LlmStatusError);
    expect(() => packConfig(bytes, new Uint8Array(15))).toThrow('linkSecret');
    expect(() => packConfig(bytes, undefined, { idleTimeoutMs: 0 })).toThrow('linkPort.idleTimeoutMs');
    expect(() => packConfig(bytes, undefined, { maxLinks: 1.5 })).toThrow('linkPort.maxLinks');
  });
});
