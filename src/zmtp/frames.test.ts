import { describe, expect, test } from 'bun:test';
import {
  commandBody,
  encodeFrame,
  FrameDecoder,
  greeting,
  parseGreeting,
  parseProperties,
  readyBody,
  ZmtpError,
  type Command,
} from './frames.ts';

function collect(max: number) {
  const messages: { frames: number[][]; dropped: number }[] = [];
  const commands: Command[] = [];
  const decoder = new FrameDecoder(
    { message: (frames, dropped) => messages.push({ frames: frames.map((f) => [...f]), dropped }), command: (c) => commands.push(c) },
    max,
  );
  return { decoder, messages, commands };
}

const cat = (...parts: Uint8Array[]): Uint8Array => {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
};

describe('ZMTP frames', () => {
  test('a greeting round-trips; a non-NULL mechanism, an old version or a bad signature is refused', () => {
    expect(parseGreeting(greeting())).toEqual({ major: 3, minor: 1, mechanism: 'NULL' });
    const curve = greeting();
    curve.set(new TextEncoder().encode('CURVE'), 12);
    expect(() => parseGreeting(curve)).toThrow('security mechanism CURVE is not supported');
    const old = greeting();
    old[10] = 2;
    expect(() => parseGreeting(old)).toThrow(ZmtpError);
    expect(() => parseGreeting(new Uint8Array(64))).toThrow('bad greeting signature');
  });

  test('messages and commands come out whole however the bytes are cut', () => {
    const long = Uint8Array.from({ length: 300 }, (_, i) => i & 0xff);
    const wire = cat(
      encodeFrame(Uint8Array.of(1), true, false),
      encodeFrame(long, false, false),
      encodeFrame(commandBody('SUBSCRIBE', Uint8Array.of(7)), false, true),
      encodeFrame(new Uint8Array(0), false, false),
    );
    for (let cut = 1; cut < wire.length; cut += 7) {
      const { decoder, messages, commands } = collect(1024);
      for (let at = 0; at < wire.length; at += cut) decoder.push(wire.subarray(at, at + cut));
      expect(messages).toEqual([
        { frames: [[1], [...long]], dropped: 0 },
        { frames: [[]], dropped: 0 },
      ]);
      expect(commands.map((c) => [c.name, [...c.data]])).toEqual([['SUBSCRIBE', [7]]]);
    }
  });

  test('a frame over the limit is skipped as it streams past; the message arrives with it empty', () => {
    const { decoder, messages } = collect(100);
    const wire = cat(
      encodeFrame(Uint8Array.of(9), true, false),
      encodeFrame(new Uint8Array(5000), false, false),
      encodeFrame(Uint8Array.of(8), false, false),
    );
    for (let at = 0; at < wire.length; at += 512) decoder.push(wire.subarray(at, at + 512));
    expect(messages).toEqual([
      { frames: [[9], []], dropped: 5000 },
      { frames: [[8]], dropped: 0 },
    ]);
  });

  test('bad flags are a protocol error; READY properties round-trip and a truncated one is refused', () => {
    expect(() => collect(10).decoder.push(Uint8Array.of(0x80, 0))).toThrow('bad frame flags');
    const ready = readyBody({ 'Socket-Type': 'SUB', Identity: '' });
    expect(parseProperties(ready.subarray(6))).toEqual({ 'Socket-Type': 'SUB', Identity: '' });
    expect(() => parseProperties(ready.subarray(6, 12))).toThrow('runs past');
  });
});
