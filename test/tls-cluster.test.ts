/**
 * A whole simulated cluster over mutual TLS, across processes: the client reaches the Coordinator's
 * proxy with its certificate, the Coordinator's legs reach the engines over https with its own,
 * the decode engine pulls KV and answers, and neither a client without a certificate nor the
 * Coordinator-less path (a direct call to an engine) without one gets anything. A controller given
 * the cluster's certificates in its topology file wires an unwired TLS cluster.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { startPdlink } from './support/child.ts';
import { clientTls, makeTestPki, type TestPki } from './support/tls-certs.ts';
import { E2E_DEADLINE_MS, proxyPost, SimCluster, until } from './support/sim-cluster.ts';
import { FAST_TIMING } from './support/controller.ts';
import { startSimController } from '../src/sim/cluster/controller.ts';

let cluster: SimCluster;
const pkis: TestPki[] = [];

beforeAll(async () => {
  cluster = await SimCluster.start({
    prefill: 1,
    decode: 1,
    tls: (ips) => {
      const pki = makeTestPki(ips);
      pkis.push(pki);
      return {
        caCert: pki.caCert,
        serverCert: pki.serverCert,
        serverKey: pki.serverKey,
        clientCert: pki.clientCert,
        clientKey: pki.clientKey,
      };
    },
  });
});
afterAll(async () => {
  await cluster?.stop();
  for (const pki of pkis) rmSync(pki.dir, { recursive: true, force: true });
});

describe('a TLS cluster', () => {
  test('every listener is https', () => {
    expect(cluster.proxyUrl).toMatch(/^https:/);
    expect(cluster.coordinatorUrl).toMatch(/^https:/);
    for (const engine of cluster.engines) {
      expect(engine.manageUrl).toMatch(/^https:/);
      expect(engine.inferenceUrl).toMatch(/^https:/);
    }
  });

  test('a completion goes through the proxy over https legs to P and D', async () => {
    for (const id of ['tls-1', 'tls-2']) {
      const res = await proxyPost(cluster, '/v1/completions', { model: cluster.model, prompt: 'hello over tls', max_tokens: 4 }, id);
      expect(res.status).toBe(200);
      const body = (await res.json()) as { choices: { text: string }[] };
      expect(body.choices[0]!.text.length).toBeGreaterThan(0);
    }
    const p = await cluster.requests('p0');
    const d = await cluster.requests('d0');
    expect(p.length).toBeGreaterThanOrEqual(2);
    expect(d.length).toBeGreaterThanOrEqual(2);
  });

  test('without a client certificate neither the proxy nor an engine answers', async () => {
    const ca = await Bun.file(pkis.at(-1)!.caCert).text();
    const noCert = (url: string) =>
      fetch(url, { tls: { ca } }).then(
        (r) => r.status,
        () => 'refused',
      );
    expect(await noCert(`${cluster.proxyUrl}/v1/models`)).toBe('refused');
    expect(await noCert(`${cluster.engine('p0').inferenceUrl}/v1/models`)).toBe('refused');
    expect(await noCert(`${cluster.engine('d0').manageUrl}/v1/status`)).toBe('refused');
  });
});

describe('a controller driving a TLS cluster', () => {
  test('wires P and D over https with its client certificate; requests then succeed; its own listener requires a certificate', async () => {
    const unwired = await SimCluster.start({
      prefill: 1,
      decode: 1,
      wire: false,
      tls: (ips) => {
        const pki = makeTestPki(ips);
        pkis.push(pki);
        return {
          caCert: pki.caCert,
          serverCert: pki.serverCert,
          serverKey: pki.serverKey,
          clientCert: pki.clientCert,
          clientKey: pki.clientKey,
        };
      },
    });
    let controller: Awaited<ReturnType<typeof startSimController>> | undefined;
    try {
      controller = await startSimController(unwired, unwired.engines, FAST_TIMING);
      expect(controller.url).toMatch(/^https:/);
      const ids = async (): Promise<number[]> => {
        try {
          const view = (await (await unwired.fetch(`${unwired.coordinatorUrl}/v1/instances`)).json()) as { instances: { id: number }[] };
          return view.instances.map((i) => i.id).sort((a, b) => a - b);
        } catch {
          return [];
        }
      };
      await until(
        async () => ((await ids()).length === 2 ? true : undefined),
        E2E_DEADLINE_MS,
        () => 'the controller did not register P and D',
      );
      await until(
        async () => {
          const res = await proxyPost(
            unwired,
            '/v1/completions',
            { model: unwired.model, prompt: 'hi', max_tokens: 2 },
            `ctl-${Math.random()}`,
          );
          await res.arrayBuffer();
          return res.status === 200 ? true : undefined;
        },
        E2E_DEADLINE_MS,
        () => 'no completion succeeded through the controller-wired TLS cluster',
      );
      const ca = await Bun.file(unwired.tlsFiles!.caCert).text();
      const noCert = await fetch(`${controller.url}/v1/health`, { tls: { ca } }).then(
        (r) => r.status,
        () => 'refused',
      );
      expect(noCert).toBe('refused');
      const withCert = await unwired.fetch(`${controller.url}/v1/health`);
      expect(withCert.status).toBe(200);
    } finally {
      await controller?.process.stop();
      await unwired.stop();
    }
  });
});

describe('pdlink sim-cluster --tls_config', () => {
  test('both engines serve over mutual TLS and the launcher links them with its client certificate', async () => {
    const net = `127.${100 + Math.floor(Math.random() * 100)}.${Math.floor(Math.random() * 256)}`;
    const [pIp, dIp] = [`${net}.11`, `${net}.12`];
    const pki = makeTestPki([pIp, dIp]);
    pkis.push(pki);
    const server = { ca_cert: pki.caCert, tls_cert: pki.serverCert, tls_key: pki.serverKey, tls_crl: pki.crl };
    const tlsConfig = join(pki.dir, 'sim-tls.json');
    writeFileSync(
      tlsConfig,
      JSON.stringify({
        management_tls_enable: true,
        management_tls_items: server,
        inference_tls_enable: true,
        inference_tls_items: server,
        client_tls_enable: true,
        client_tls_items: { ca_cert: pki.caCert, tls_cert: pki.clientCert, tls_key: pki.clientKey },
      }),
    );
    const child = await startPdlink(['sim-cluster', '--prefill_ip', pIp, '--decode_ip', dIp, '--tls_config', tlsConfig], {
      listeners: ['prefill-inference', 'decode-management'],
      printed: 'both engines RoleReady',
      deadlineMs: 40_000,
    });
    try {
      expect(child.output()).toContain('both engines RoleReady');
      expect(child.urls['prefill-inference']).toBe(`https://${pIp}:1025`);
      const good = await fetch(`${child.urls['decode-management']}/v1/status`, { tls: clientTls(pki, 'client') });
      expect(good.status).toBe(200);
      for (const who of ['none', 'revoked'] as const) {
        const got = await fetch(`${child.urls['decode-management']}/v1/status`, { tls: clientTls(pki, who) }).then(
          (r) => r.status,
          () => 'refused',
        );
        expect(got).toBe('refused');
      }
    } finally {
      await child.kill('SIGTERM');
    }
  });
});
