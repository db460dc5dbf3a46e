/**
 * The platform seam's Deno side (src/platform/deno.ts), picked by index.ts under Deno: serving with
 * the count of requests in flight the connection cap reads, the peer address, stopping with a
 * stream still open, https calls with our CA through one reused client, files, and the TLS
 * settings it refuses rather than ignore.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { ConfigError } from '../../src/core/errors.ts';
import { platform } from '../../src/platform/index.ts';
import type { ServeEnv } from '../../src/platform/index.ts';
import { makeTestPki } from '../support/tls-certs.ts';
import { recordingSource } from '../doubles/pushed-source.ts';

Deno.test('index.ts picks the Deno seam under Deno', () => {
  assert.equal(platform.name, 'deno');
});

Deno.test('serve: the env counts requests in flight and names the peer; stop closes an open stream', async () => {
  const seen: { pending: number; peer: string | undefined }[] = [];
  const release = Promise.withResolvers<void>();
  const holding = Promise.withResolvers<void>();
  const server = platform.serve({
    hostname: '127.0.0.1',
    port: 0,
    idleTimeoutSeconds: 180,
    fetch: async (request: Request, env: ServeEnv) => {
      seen.push({ pending: env.pendingRequests, peer: platform.peerAddress(request, env) });
      platform.keepOpen(request, env);
      if (new URL(request.url).pathname === '/hold') {
        holding.resolve();
        await release.promise;
      }
      if (new URL(request.url).pathname === '/stream')
        return new Response(new ReadableStream({ start: (c) => c.enqueue(new Uint8Array([1])) }));
      return new Response('ok');
    },
  });
  const base = `http://127.0.0.1:${server.port}`;
  const held = fetch(`${base}/hold`);
  await holding.promise;
  assert.equal(await (await fetch(`${base}/other`)).text(), 'ok');
  release.resolve();
  assert.equal(await (await held).text(), 'ok');
  assert.deepEqual(seen, [
    { pending: 1, peer: '127.0.0.1' },
    { pending: 2, peer: '127.0.0.1' },
  ]);

  const stream = await fetch(`${base}/stream`);
  const reader = stream.body!.getReader();
  assert.deepEqual((await reader.read()).value, new Uint8Array([1]));
  await server.stop(); // resolves although the stream never ended
  await assert.rejects(reader.read());
  await assert.rejects(fetch(`${base}/other`));
});

Deno.test('serve refuses client certificates and CRLs, naming them; tlsInit refuses a client CRL', () => {
  const tls = { cert: 'c', key: 'k' };
  assert.throws(
    () => platform.serve({ hostname: '127.0.0.1', port: 0, idleTimeoutSeconds: 1, fetch: () => new Response(), tls: { ...tls, ca: 'ca' } }),
    (err: unknown) => err instanceof ConfigError && /TLS setting ca cannot be enforced/.test(err.message),
  );
  assert.deepEqual(platform.unsupportedServerTls({ ...tls, ca: 'ca', crl: 'crl', requestCert: true }), ['ca', 'crl']);
  assert.deepEqual(platform.unsupportedServerTls({ ...tls, passphrase: 'p' }), []);
  assert.deepEqual(platform.unsupportedClientTls({ ca: 'ca', cert: 'c', key: 'k' }), []);
  assert.throws(() => platform.tlsInit({ ca: 'ca', crl: 'crl' }), /TLS setting crl cannot be enforced/);
});

Deno.test("tlsInit: https with our CA and an encrypted key's server, one client per config", async () => {
  const pki = makeTestPki();
  const server = platform.serve({
    hostname: '127.0.0.1',
    port: 0,
    idleTimeoutSeconds: 180,
    tls: { cert: readFileSync(pki.serverCert, 'utf8'), key: readFileSync(pki.encryptedServerKey, 'utf8'), passphrase: pki.passphrase },
    fetch: () => new Response('over tls'),
  });
  try {
    const url = `https://127.0.0.1:${server.port}/`;
    const tls = {
      ca: readFileSync(pki.caCert, 'utf8'),
      cert: readFileSync(pki.clientCert, 'utf8'),
      key: readFileSync(pki.clientKey, 'utf8'),
    };
    const init = platform.tlsInit(tls) as RequestInit & { client: { close(): void } };
    assert.equal((platform.tlsInit(tls) as { client?: unknown }).client, init.client, 'the same config reuses its client');
    assert.notEqual((platform.tlsInit({ ...tls }) as { client?: unknown }).client, init.client);
    assert.equal(await (await fetch(url, init)).text(), 'over tls');
    assert.equal(await (await fetch(url, platform.tlsInit(tls))).text(), 'over tls');
    await assert.rejects(fetch(url), 'without our CA the server is not trusted');
  } finally {
    await server.stop();
    Deno.removeSync(pki.dir, { recursive: true });
  }
});

Deno.test('fileResponse: a file as a body with its headers, undefined when there is none', async () => {
  const url = new URL('../../package.json', import.meta.url);
  const res = await platform.fileResponse(url, { 'content-type': 'application/json' });
  assert.equal(res!.headers.get('content-type'), 'application/json');
  assert.equal(JSON.parse(await res!.text()).name, 'pdlink');
  assert.equal(await platform.fileResponse(new URL('./no-such-file', import.meta.url), {}), undefined);
});

Deno.test("pushedBody as Deno.serve's response: each write reaches the client before the end", async () => {
  const source = recordingSource('first\n');
  const server = platform.serve({
    hostname: '127.0.0.1',
    port: 0,
    idleTimeoutSeconds: 10,
    fetch: () => new Response(platform.pushedBody(source)),
  });
  try {
    const dec = new TextDecoder();
    const reader = (await fetch(`http://127.0.0.1:${server.port}`)).body!.getReader();
    assert.equal(dec.decode((await reader.read()).value), 'first\n');
    source.out!.write(new TextEncoder().encode('second\n'));
    assert.equal(dec.decode((await reader.read()).value), 'second\n');
    source.out!.close();
    assert.equal((await reader.read()).done, true);
  } finally {
    await server.stop();
  }
});
