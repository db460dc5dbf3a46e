import { afterAll, beforeAll, expect, test } from 'bun:test';
import { readFileSync, rmSync } from 'node:fs';
import { postLeg } from './upstream.ts';
import { readLegText } from './idle.ts';
import { makeTestPki, type TestPki } from '../../../test/support/tls-certs.ts';

let pki: TestPki;
beforeAll(() => {
  pki = makeTestPki();
});
afterAll(() => rmSync(pki.dir, { recursive: true, force: true }));

test('https legs present the client certificate and keep one pooled connection for consecutive legs', async () => {
  const read = (p: string) => readFileSync(p, 'utf8');
  const clientPorts = new Set<number>();
  const server = Bun.serve({
    hostname: '127.0.0.1',
    port: 0,
    tls: { cert: read(pki.serverCert), key: read(pki.serverKey), ca: read(pki.caCert), requestCert: true, rejectUnauthorized: true },
    fetch(req, srv) {
      clientPorts.add(srv.requestIP(req)!.port);
      return new Response('{}', { headers: { 'content-type': 'application/json' } });
    },
  });
  try {
    const url = `https://127.0.0.1:${server.port}/v1/completions`;
    const tls = { ca: read(pki.caCert), cert: read(pki.clientCert), key: read(pki.clientKey) };
    for (let i = 0; i < 5; i++) {
      const res = await postLeg(url, { 'content-type': 'application/json' }, '{}', new AbortController().signal, Infinity, {
        engineTls: tls,
      });
      expect(res.status).toBe(200);
      await readLegText(res, 1 << 20);
    }
    expect(clientPorts.size).toBe(1);
    // Without the client certificate the same server refuses the leg.
    const refused = await postLeg(url, {}, '{}', new AbortController().signal, Infinity, { engineTls: { ca: tls.ca } }).then(
      () => 'answered',
      () => 'refused',
    );
    expect(refused).toBe('refused');
  } finally {
    server.stop(true);
  }
});
