import { describe, expect, test } from 'bun:test';
import { platform } from './index.ts';
import { bunPlatform } from './bun.ts';
import type { ServeEnv } from './platform.ts';
import { recordingSource } from '../../test/doubles/pushed-source.ts';

const enc = new TextEncoder();
const dec = new TextDecoder();

describe('the platform seam on Bun', () => {
  test('index.ts picks it under Bun', () => {
    expect(platform).toBe(bunPlatform);
    expect(platform.name).toBe('bun');
  });

  test("serve: Bun's server is the env, counting requests in flight and naming the peer", async () => {
    const seen: { pending: number; peer: string | undefined }[] = [];
    const holding = Promise.withResolvers<void>();
    const release = Promise.withResolvers<void>();
    const server = platform.serve({
      hostname: '127.0.0.1',
      port: 0,
      idleTimeoutSeconds: 1000, // above Bun's limit: capped, not refused
      fetch: async (request: Request, env: ServeEnv) => {
        seen.push({ pending: env.pendingRequests, peer: platform.peerAddress(request, env) });
        platform.keepOpen(request, env);
        if (new URL(request.url).pathname === '/hold') {
          holding.resolve();
          await release.promise;
        }
        return new Response('ok');
      },
    });
    try {
      const base = `http://127.0.0.1:${server.port}`;
      const held = fetch(`${base}/hold`);
      await holding.promise;
      expect(await (await fetch(`${base}/other`)).text()).toBe('ok');
      release.resolve();
      expect(await (await held).text()).toBe('ok');
      expect(seen).toEqual([
        { pending: 1, peer: '127.0.0.1' },
        { pending: 2, peer: '127.0.0.1' },
      ]);
    } finally {
      await server.stop();
    }
    await expect(fetch(`http://127.0.0.1:${server.port}/other`)).rejects.toThrow();
  });

  test('serve: POSTs to an exact path go to its route (query and all, with the server as env); the rest to fetch', async () => {
    const server = platform.serve({
      hostname: '127.0.0.1',
      port: 0,
      idleTimeoutSeconds: 10,
      fetch: (request: Request) => new Response(`fetch ${request.method} ${new URL(request.url).pathname}`),
      posts: {
        '/v1/x': (request: Request, env: unknown) =>
          new Response(`route ${new URL(request.url).search} ${(env as ServeEnv).pendingRequests} ${platform.peerAddress(request, env)}`),
      },
    });
    try {
      const base = `http://127.0.0.1:${server.port}`;
      const answer = async (method: string, path: string) =>
        (await fetch(base + path, { method, body: method === 'GET' ? undefined : '{}' })).text();
      expect(await answer('POST', '/v1/x')).toBe('route  1 127.0.0.1');
      expect(await answer('POST', '/v1/x?a=1')).toBe('route ?a=1 1 127.0.0.1');
      expect(await answer('GET', '/v1/x')).toBe('fetch GET /v1/x');
      expect(await answer('PUT', '/v1/x')).toBe('fetch PUT /v1/x');
      for (const other of ['/v1/x/', '/v1/%78', '/V1/x', '/v1//x']) expect(await answer('POST', other)).toBe(`fetch POST ${other}`);
    } finally {
      await server.stop();
    }
  });

  test("tlsInit is Bun's own `tls` option, and the Bun seam refuses no TLS setting", () => {
    const tls = { ca: 'ca', cert: 'c', key: 'k', crl: 'crl' };
    expect(platform.tlsInit(tls)).toEqual({ tls } as RequestInit);
    expect(platform.unsupportedClientTls(tls)).toEqual([]);
    expect(platform.unsupportedServerTls({ cert: 'c', key: 'k', ca: 'ca', crl: 'crl', requestCert: true })).toEqual([]);
  });

  test('fileResponse: the file with its headers, undefined when there is none', async () => {
    const res = await platform.fileResponse(new URL('../../package.json', import.meta.url), { 'content-type': 'application/json' });
    expect(res!.headers.get('content-type')).toBe('application/json');
    expect(((await res!.json()) as { name: string }).name).toBe('pdlink');
    expect(await platform.fileResponse(new URL('./no-such-file', import.meta.url), {})).toBeUndefined();
  });

  test('peerAddress and keepOpen tolerate an env that is not a server (app.request in tests)', () => {
    const request = new Request('http://x/');
    expect(platform.peerAddress(request, undefined)).toBeUndefined();
    expect(() => platform.keepOpen(request, {})).not.toThrow();
  });

  test('pushedBody: the source starts at the first read, once, and what it writes is read in order', async () => {
    const source = recordingSource('a');
    const reader = platform.pushedBody(source).getReader();
    expect(source.starts).toBe(0);
    expect(dec.decode((await reader.read()).value)).toBe('a');
    expect(source.starts).toBe(1);
    source.out!.write(enc.encode('b'));
    source.out!.write(enc.encode('c'));
    source.out!.close();
    let rest = '';
    for (let r = await reader.read(); !r.done; r = await reader.read()) rest += dec.decode(r.value);
    expect(rest).toBe('bc');
    // Later reads pulled again: the source was not started twice.
    expect(source.starts).toBe(1);
  });

  test('pushedBody: a failure reaches the reader; a reader that cancels reaches the source', async () => {
    const failing = recordingSource('a');
    const broken = platform.pushedBody(failing).getReader();
    expect(dec.decode((await broken.read()).value)).toBe('a');
    // Not an Error: made one, so the reader still learns what went wrong.
    failing.out!.error('engine gone');
    await expect(broken.read()).rejects.toThrow('engine gone');

    const left = recordingSource('a');
    const reader = platform.pushedBody(left).getReader();
    await reader.read();
    await reader.cancel('client left');
    expect(await left.cancelled).toBe('client left');
  });

  test("pushedBody as Bun.serve's response: each write reaches the client before the end, and a client that leaves cancels it", async () => {
    const sources = [recordingSource('first\n'), recordingSource('first\n')];
    let served = 0;
    const server = platform.serve({
      hostname: '127.0.0.1',
      port: 0,
      idleTimeoutSeconds: 10,
      fetch: () => new Response(platform.pushedBody(sources[served++]!)),
    });
    try {
      const base = `http://127.0.0.1:${server.port}`;
      const reader = (await fetch(base)).body!.getReader();
      expect(dec.decode((await reader.read()).value)).toBe('first\n');
      sources[0]!.out!.write(enc.encode('second\n'));
      expect(dec.decode((await reader.read()).value)).toBe('second\n');
      sources[0]!.out!.close();
      expect((await reader.read()).done).toBe(true);

      const leaving = new AbortController();
      const other = (await fetch(base, { signal: leaving.signal })).body!.getReader();
      expect(dec.decode((await other.read()).value)).toBe('first\n');
      leaving.abort();
      expect(await sources[1]!.cancelled).toBeInstanceOf(Error);
    } finally {
      await server.stop();
    }
  });
});
