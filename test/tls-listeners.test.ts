/**
 * Mutual TLS on real listeners, across processes: with `ca_cert` named, the Coordinator's management
 * and inference listeners and the agent's management listener refuse a client without a certificate,
 * with one from a rogue CA and with one the CRL revokes, and serve a good one. A TLS setting naming a
 * file that is missing stops the start with exit 2 naming the key, and the key's passphrase never
 * appears in the output.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { REPO_ROOT, runPdlink, startPdlink, type PdlinkChild } from './support/child.ts';
import { clientTls, makeTestPki, type TestPki } from './support/tls-certs.ts';
import { unusedLinkPort } from './support/link-port.ts';

let pki: TestPki;
beforeAll(() => {
  pki = makeTestPki();
  writeFileSync(join(pki.dir, 'key-passphrase.txt'), `${pki.passphrase}\n`);
});
afterAll(() => rmSync(pki.dir, { recursive: true, force: true }));

function serverItems(): Record<string, string> {
  return {
    ca_cert: pki.caCert,
    tls_cert: pki.serverCert,
    tls_key: pki.encryptedServerKey,
    tls_passwd: join(pki.dir, 'key-passphrase.txt'),
    tls_crl: pki.crl,
  };
}

/** The HTTP status a client gets, or `refused` when the TLS handshake or connection fails. */
async function statusOf(url: string, who: 'client' | 'rogue' | 'revoked' | 'none', init: RequestInit = {}): Promise<number | 'refused'> {
  try {
    const res = await fetch(url, { ...init, tls: clientTls(pki, who), keepalive: false });
    await res.arrayBuffer();
    return res.status;
  } catch {
    return 'refused';
  }
}

async function expectOnlyGoodClient(url: string, goodStatus: number, init: RequestInit = {}): Promise<void> {
  expect(await statusOf(url, 'none', init)).toBe('refused');
  expect(await statusOf(url, 'rogue', init)).toBe('refused');
  expect(await statusOf(url, 'revoked', init)).toBe('refused');
  expect(await statusOf(url, 'client', init)).toBe(goodStatus);
}

describe('Coordinator listeners with mutual TLS', () => {
  let child: PdlinkChild;
  beforeAll(async () => {
    const config = join(pki.dir, 'ms_coordinator.json');
    writeFileSync(
      config,
      JSON.stringify({
        tls_config: {
          controller_server_tls_enable: true,
          controller_server_tls_items: serverItems(),
          request_server_tls_enable: true,
          request_server_tls_items: serverItems(),
        },
      }),
    );
    child = await startPdlink(['coordinator', '--config', config, '--manage_port', '0', '--predict_port', '0'], {
      listeners: ['management', 'inference'],
    });
  });
  afterAll(async () => {
    await child.kill('SIGTERM');
  });

  test('listening lines say https', () => {
    expect(child.urls.management).toMatch(/^https:\/\/127\.0\.0\.1:\d+$/);
    expect(child.urls.inference).toMatch(/^https:\/\/127\.0\.0\.1:\d+$/);
  });

  test('management: no, rogue and revoked certificates are refused; refresh changes nothing for them', async () => {
    const refresh = (): RequestInit => ({
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: readFileSync(join(REPO_ROOT, 'test', 'fixtures', 'seed-refresh.json'), 'utf8'),
    });
    expect(await statusOf(`${child.urls.management}/v1/instances/refresh`, 'none', refresh())).toBe('refused');
    expect(await statusOf(`${child.urls.management}/v1/instances/refresh`, 'rogue', refresh())).toBe('refused');
    expect(await statusOf(`${child.urls.management}/v1/instances/refresh`, 'revoked', refresh())).toBe('refused');
    const view = await fetch(`${child.urls.management}/v1/instances`, { tls: clientTls(pki, 'client') });
    expect(((await view.json()) as { instances: unknown[] }).instances).toEqual([]);
    // Even the probes: a listener that requires certificates requires them for every route.
    await expectOnlyGoodClient(`${child.urls.management}/v2/health/live`, 200);
  });

  test('inference: only the good certificate reaches a route', async () => {
    // No instance is registered: the good client reaches the proxy, which lists no model.
    await expectOnlyGoodClient(`${child.urls.inference}/v1/models`, 200);
  });

  test('the key passphrase is not in the output', () => {
    expect(child.output()).not.toContain(pki.passphrase);
  });
});

describe('agent management listener with mutual TLS', () => {
  test('refuses no, rogue and revoked certificates and serves a good one', async () => {
    const config = join(pki.dir, 'instance.json');
    writeFileSync(
      config,
      JSON.stringify({
        pdlink: {
          devices: [{ device_logical_id: 0, device_ip: '127.0.0.1' }],
          link_base_port: await unusedLinkPort('127.0.0.1'),
          tls: { management_tls_enable: true, management_tls_items: serverItems() },
        },
      }),
    );
    const agent = await startPdlink(['instance', '--config', config, '--manage_port', '0'], { listeners: ['management'] });
    try {
      expect(agent.urls.management).toMatch(/^https:/);
      await expectOnlyGoodClient(`${agent.urls.management}/v1/status`, 200);
      expect(agent.output()).not.toContain(pki.passphrase);
    } finally {
      await agent.kill('SIGTERM');
    }
  });
});

describe('TLS settings fail closed', () => {
  test('a missing certificate file exits 2 naming the key', async () => {
    const config = join(pki.dir, 'missing.json');
    writeFileSync(
      config,
      JSON.stringify({
        tls_config: {
          controller_server_tls_enable: true,
          controller_server_tls_items: { ...serverItems(), tls_cert: join(pki.dir, 'nope.crt') },
        },
      }),
    );
    const { code, stderr, stdout } = await runPdlink(['coordinator', '--config', config, '--manage_port', '0', '--predict_port', '0']);
    expect(code).toBe(2);
    expect(stderr).toContain('tls_config.controller_server_tls_items.tls_cert');
    expect(stdout).not.toContain('listening');
  });

  test('a wrong passphrase exits 2 naming tls_passwd, without the passphrase', async () => {
    const wrong = join(pki.dir, 'wrong-passphrase.txt');
    writeFileSync(wrong, 'not-the-passphrase-4711\n');
    const config = join(pki.dir, 'instance-wrong.json');
    writeFileSync(
      config,
      JSON.stringify({ pdlink: { tls: { management_tls_enable: true, management_tls_items: { ...serverItems(), tls_passwd: wrong } } } }),
    );
    const { code, stderr, stdout } = await runPdlink(['instance', '--config', config, '--manage_port', '0']);
    expect(code).toBe(2);
    expect(stderr).toContain('pdlink.tls.management_tls_items.tls_passwd');
    expect(stderr + stdout).not.toContain('not-the-passphrase-4711');
  });

  test('a CRL on a client side without ca_cert, or an inference listener with a missing CRL, exits 2 naming the key', async () => {
    const config = join(pki.dir, 'crl-missing.json');
    writeFileSync(
      config,
      JSON.stringify({
        tls_config: { request_server_tls_enable: true, request_server_tls_items: { ...serverItems(), tls_crl: join(pki.dir, 'none.crl') } },
      }),
    );
    const { code, stderr } = await runPdlink(['coordinator', '--config', config, '--manage_port', '0', '--predict_port', '0']);
    expect(code).toBe(2);
    expect(stderr).toContain('tls_config.request_server_tls_items.tls_crl');
  });
});
