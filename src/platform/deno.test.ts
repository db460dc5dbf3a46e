import { describe, expect, test } from 'bun:test';
import { denoPlatform, unsupportedClientTls, unsupportedServerTls } from './deno.ts';
import { recordingSource } from '../../test/doubles/pushed-source.ts';

const dec = new TextDecoder();

// The Deno seam's behaviour on Deno is in test/deno/platform.deno.ts; here, what holds on any platform.
describe("the Deno seam's rules", () => {
  test('a listener asking for client certificates or a CRL is refused on Deno, field by field', () => {
    expect(unsupportedServerTls({ cert: 'c', key: 'k' })).toEqual([]);
    expect(unsupportedServerTls({ cert: 'c', key: 'k', passphrase: 'p' })).toEqual([]);
    expect(unsupportedServerTls({ cert: 'c', key: 'k', ca: 'ca', requestCert: true, rejectUnauthorized: true })).toEqual(['ca']);
    expect(unsupportedServerTls({ cert: 'c', key: 'k', ca: 'ca', crl: 'crl' })).toEqual(['ca', 'crl']);
  });

  test('a client with a CRL is refused on Deno; CA and certificate are fine', () => {
    expect(unsupportedClientTls({ ca: 'ca', cert: 'c', key: 'k', passphrase: 'p' })).toEqual([]);
    expect(unsupportedClientTls({ ca: 'ca', crl: 'crl' })).toEqual(['crl']);
  });

  test('the peer address comes from the connection info Deno passes as env', () => {
    const info = { remoteAddr: { transport: 'tcp', hostname: '127.0.0.9', port: 5000 } };
    expect(denoPlatform.peerAddress(new Request('http://x/'), info)).toBe('127.0.0.9');
    expect(denoPlatform.peerAddress(new Request('http://x/'), undefined)).toBeUndefined();
  });

  test('used outside Deno, it says so instead of failing somewhere deeper', () => {
    expect(() => denoPlatform.serve({ hostname: '127.0.0.1', port: 0, idleTimeoutSeconds: 1, fetch: () => new Response() })).toThrow(
      'the Deno platform seam was used outside Deno',
    );
  });

  test('pushedBody is a standard stream: the source starts with it, writes queue until read, close and failure end it', async () => {
    const source = recordingSource('a');
    const body = denoPlatform.pushedBody(source);
    expect(source.starts).toBe(1);
    source.out!.write(new TextEncoder().encode('b'));
    source.out!.close();
    expect(await new Response(body).text()).toBe('ab');

    const failing = recordingSource('a');
    const reader = denoPlatform.pushedBody(failing).getReader();
    expect(dec.decode((await reader.read()).value)).toBe('a');
    failing.out!.error(new Error('engine gone'));
    await expect(reader.read()).rejects.toThrow('engine gone');

    const left = recordingSource();
    await denoPlatform.pushedBody(left).cancel('client left');
    expect(await left.cancelled).toBe('client left');
  });
});
