/**
 * The Coordinator started by the pdlink CLI on Deno: its listening lines, the refresh API over real
 * HTTP with its error paths, the PD proxy in front of simulated engines (whole and streamed), an
 * orderly exit on SIGTERM, exit code 2 on a bad configuration, and TLS: a listener with an
 * encrypted key serves https, while a setting Deno cannot enforce stops the start, named.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { makeTestPki } from '../support/tls-certs.ts';
import { completion, denoCluster, runOnDeno, startOnDeno } from './support.ts';

const json = { 'content-type': 'application/json' };

Deno.test('a Coordinator on Deno refreshes, proxies to the engines and exits 0 on SIGTERM', async (t) => {
  const cluster = await denoCluster();
  let stopped = false;
  try {
    await t.step('the wired cluster is registered and ready', async () => {
      const view = (await (await fetch(`${cluster.coordinatorUrl}/v1/instances`)).json()) as { instances: { id: number }[] };
      assert.deepEqual(view.instances.map((i) => i.id).sort(), [100, 200]);
      assert.equal(await fetch(`${cluster.coordinatorUrl}/v1/readiness`).then((r) => r.text().then(() => r.status)), 200);
    });

    await t.step('a bad field is a 400 naming it, and the registry is unchanged', async () => {
      const before = await (await fetch(`${cluster.coordinatorUrl}/v1/instances`)).text();
      const body = {
        ids: [7],
        instances: [
          {
            id: 7,
            ip: '127.0.0.1',
            port: '1025',
            metric_port: '1026',
            model_name: 'm',
            static_info: {
              group_id: 0,
              max_seq_len: 2048,
              max_output_len: 512,
              total_slots_num: 200,
              total_block_num: 1024,
              block_size: 0,
              label: 2,
              role: 80,
            },
            dynamic_info: { avail_slots_num: 200, avail_block_num: 1024 },
          },
        ],
      };
      const res = await fetch(`${cluster.coordinatorUrl}/v1/instances/refresh`, {
        method: 'POST',
        headers: json,
        body: JSON.stringify(body),
      });
      assert.equal(res.status, 400);
      const error = (await res.json()) as { issues: { path: string }[] };
      assert.deepEqual(
        error.issues.map((i) => i.path),
        ['instances[0].static_info.block_size'],
      );
      const malformed = await fetch(`${cluster.coordinatorUrl}/v1/instances/refresh`, { method: 'POST', headers: json, body: '{"ids": [' });
      assert.equal(malformed.status, 400);
      await malformed.text();
      assert.equal(await (await fetch(`${cluster.coordinatorUrl}/v1/instances`)).text(), before);
    });

    await t.step('a whole completion goes through P and D', async () => {
      const res = await fetch(`${cluster.proxyUrl}/v1/completions`, completion('whole answer on Deno'));
      const body = (await res.json()) as { choices: { text: string }[] };
      assert.equal(res.status, 200, JSON.stringify(body));
      assert.ok(body.choices[0]!.text.length > 0);
      const id = res.headers.get('x-request-id')!;
      assert.equal((await cluster.requests('p0', id)).length, 1);
      assert.equal((await cluster.requests('d0', id)).length, 1);
    });

    await t.step("a streamed chat completion is D's stream byte for byte", async () => {
      const res = await fetch(`${cluster.proxyUrl}/v1/chat/completions`, {
        method: 'POST',
        headers: json,
        body: JSON.stringify({ model: 'pdlink-sim', messages: [{ role: 'user', content: 'stream on Deno' }], max_tokens: 8, stream: true }),
      });
      assert.equal(res.status, 200);
      assert.match(res.headers.get('content-type') ?? '', /text\/event-stream/);
      const text = await res.text();
      assert.ok(text.trimEnd().endsWith('data: [DONE]'), text);
      const [record] = await cluster.requests('d0', res.headers.get('x-request-id')!);
      const digest = new Uint8Array(await crypto.subtle.digest('SHA-256', new TextEncoder().encode(text)));
      assert.equal(record!['digest'], Array.from(digest, (b) => b.toString(16).padStart(2, '0')).join(''));
    });

    await t.step('SIGTERM closes the Coordinator with exit code 0', async () => {
      assert.equal(await cluster.coordinator.stop('SIGTERM'), 0);
      stopped = true;
    });
  } finally {
    if (!stopped) await cluster.coordinator.stop('SIGKILL');
    await cluster.stop();
  }
});

Deno.test('the CLI on Deno: listening lines, SIGINT, and exit code 2 on bad configuration', async () => {
  const coordinator = await startOnDeno(
    'coordinator',
    ['coordinator', '--manage_port', '0', '--predict_port', '0'],
    ['management', 'inference'],
  );
  assert.match(coordinator.urls['management']!, /^http:\/\/127\.0\.0\.1:\d+$/);
  assert.equal(await fetch(`${coordinator.urls['management']}/v1/readiness`).then((r) => r.text().then(() => r.status)), 503);
  assert.equal(await coordinator.stop('SIGINT'), 0);

  const dir = mkdtempSync(join(tmpdir(), 'pdlink-deno-config-'));
  try {
    const bad = join(dir, 'ms_coordinator.json');
    writeFileSync(bad, '{"http_config": ');
    const invalid = await runOnDeno(['coordinator', '--config', bad]);
    assert.equal(invalid.code, 2);
    assert.match(invalid.output, /not valid JSON/);
    const unknown = await runOnDeno(['coordinator', '--no_such_option', 'x']);
    assert.equal(unknown.code, 2);
    assert.match(unknown.output, /no_such_option/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

Deno.test('TLS on Deno: an encrypted key serves https; client certificates and CRLs refuse to start, named', async () => {
  const pki = makeTestPki();
  const passphraseFile = join(pki.dir, 'key-passphrase.txt');
  writeFileSync(passphraseFile, `${pki.passphrase}\n`);
  const identity = { tls_cert: pki.serverCert, tls_key: pki.encryptedServerKey, tls_passwd: passphraseFile };
  const config = (tls: Record<string, unknown>): string => {
    const path = join(pki.dir, `coordinator-${crypto.randomUUID()}.json`);
    writeFileSync(path, JSON.stringify({ tls_config: tls }));
    return path;
  };
  try {
    const https = await startOnDeno(
      'coordinator',
      [
        'coordinator',
        '--config',
        config({ controller_server_tls_enable: true, controller_server_tls_items: identity }),
        '--manage_port',
        '0',
        '--predict_port',
        '0',
      ],
      ['management', 'inference'],
    );
    try {
      assert.match(https.urls['management']!, /^https:/);
      const client = Deno.createHttpClient({ caCerts: [readFileSync(pki.caCert, 'utf8')] });
      const res = await fetch(`${https.urls['management']}/v1/instances`, { client });
      assert.equal(res.status, 200);
      await res.text();
      client.close();
      await assert.rejects(fetch(`${https.urls['management']}/v1/instances`), 'a client without the CA cannot verify the listener');
      assert.ok(!https.output().includes(pki.passphrase));
    } finally {
      await https.stop();
    }

    const clientCerts = await runOnDeno([
      'coordinator',
      '--config',
      config({ controller_server_tls_enable: true, controller_server_tls_items: { ...identity, ca_cert: pki.caCert } }),
    ]);
    assert.equal(clientCerts.code, 2);
    assert.match(clientCerts.output, /tls_config\.controller_server_tls_items\.ca_cert: .*cannot enforce client certificates/);
    assert.doesNotMatch(clientCerts.output, /listening on/);

    const revocation = await runOnDeno([
      'coordinator',
      '--config',
      config({ mindie_client_tls_enable: true, mindie_client_tls_items: { ca_cert: pki.caCert, tls_crl: pki.crl } }),
    ]);
    assert.equal(revocation.code, 2);
    assert.match(revocation.output, /tls_config\.mindie_client_tls_items\.tls_crl: .*cannot enforce a certificate revocation list/);
  } finally {
    rmSync(pki.dir, { recursive: true, force: true });
  }
});

/** openssl is what makes the test certificates; say so plainly when it is missing. */
if (spawnSync('openssl', ['version']).status !== 0) throw new Error('the TLS tests need openssl on the PATH');
