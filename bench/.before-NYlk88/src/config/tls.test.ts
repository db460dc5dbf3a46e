import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { ConfigError } from '../core/errors.ts';
import { clientTlsOf, serverTlsOf } from './tls.ts';
import { makeTestPki, type TestPki } from '../../test/support/tls-certs.ts';

let pki: TestPki;
let passFile: string;
beforeAll(() => {
  pki = makeTestPki();
  passFile = join(pki.dir, 'pass.txt');
  writeFileSync(passFile, `${pki.passphrase}\n`);
});
afterAll(() => rmSync(pki.dir, { recursive: true, force: true }));

function errorOf(fn: () => unknown): ConfigError {
  try {
    fn();
  } catch (err) {
    if (err instanceof ConfigError) return err;
    throw err;
  }
  throw new Error('expected a ConfigError');
}

const E = 'x.enable';
const I = 'x.items';

describe('serverTlsOf', () => {
  test('off unless enabled', () => {
    expect(serverTlsOf(E, I, undefined, { tls_cert: 'nope' })).toBeUndefined();
    expect(serverTlsOf(E, I, false, { tls_cert: 'nope' })).toBeUndefined();
  });

  test('without ca_cert: TLS without client certificates', () => {
    const tls = serverTlsOf(E, I, true, { tls_cert: pki.serverCert, tls_key: pki.serverKey })!;
    expect(tls.cert).toContain('BEGIN CERTIFICATE');
    expect(tls.requestCert).toBeUndefined();
    expect(tls.ca).toBeUndefined();
  });

  test('with ca_cert and tls_crl: requests and verifies client certificates, with the CRL', () => {
    const tls = serverTlsOf(E, I, true, { tls_cert: pki.serverCert, tls_key: pki.serverKey, ca_cert: pki.caCert, tls_crl: pki.crl })!;
    expect(tls.requestCert).toBe(true);
    expect(tls.rejectUnauthorized).toBe(true);
    expect(tls.crl).toContain('BEGIN X509 CRL');
  });

  test('an encrypted key with its passphrase file is accepted; the passphrase never appears in errors', () => {
    const tls = serverTlsOf(E, I, true, { tls_cert: pki.serverCert, tls_key: pki.encryptedServerKey, tls_passwd: passFile })!;
    expect(tls.passphrase).toBe(pki.passphrase);
    const wrong = join(pki.dir, 'wrong.txt');
    writeFileSync(wrong, 'wrong-one');
    const err = errorOf(() => serverTlsOf(E, I, true, { tls_cert: pki.serverCert, tls_key: pki.encryptedServerKey, tls_passwd: wrong }));
    expect(err.message).toContain('x.items.tls_passwd');
    expect(err.message).not.toContain('wrong-one');
  });

  test('an encrypted key without tls_passwd names tls_passwd', () => {
    const err = errorOf(() => serverTlsOf(E, I, true, { tls_cert: pki.serverCert, tls_key: pki.encryptedServerKey }));
    expect(err.message).toContain('x.items.tls_key');
    expect(err.message).toContain('tls_passwd');
  });

  test('fails closed naming the key: missing, empty, wrong kind of file, CRL without CA, missing cert/key', () => {
    const empty = join(pki.dir, 'empty.pem');
    writeFileSync(empty, '\n');
    const base = { tls_cert: pki.serverCert, tls_key: pki.serverKey };
    expect(errorOf(() => serverTlsOf(E, I, true, {})).message).toContain(
      'x.items: tls_cert and tls_key are required when x.enable is true',
    );
    expect(errorOf(() => serverTlsOf(E, I, true, { ...base, tls_cert: join(pki.dir, 'no.crt') })).message).toContain(
      'x.items.tls_cert: cannot read',
    );
    expect(errorOf(() => serverTlsOf(E, I, true, { ...base, ca_cert: empty })).message).toContain('x.items.ca_cert');
    expect(errorOf(() => serverTlsOf(E, I, true, { ...base, tls_key: pki.serverCert })).message).toContain('x.items.tls_key');
    expect(errorOf(() => serverTlsOf(E, I, true, { ...base, tls_cert: pki.serverKey })).message).toContain(
      'x.items.tls_cert: not a PEM certificate',
    );
    expect(errorOf(() => serverTlsOf(E, I, true, { ...base, tls_crl: pki.crl })).message).toContain(
      'x.items.tls_crl: needs x.items.ca_cert',
    );
    expect(errorOf(() => serverTlsOf(E, I, true, { ...base, ca_cert: pki.caCert, tls_crl: pki.caCert })).message).toContain(
      'x.items.tls_crl',
    );
  });
});

describe('clientTlsOf', () => {
  test('CA only, or CA with a client certificate', () => {
    expect(clientTlsOf(E, I, true, { ca_cert: pki.caCert })).toEqual({ ca: expect.stringContaining('BEGIN CERTIFICATE') });
    const tls = clientTlsOf(E, I, true, { ca_cert: pki.caCert, tls_cert: pki.clientCert, tls_key: pki.clientKey })!;
    expect(tls.cert).toContain('BEGIN CERTIFICATE');
    expect(tls.key).toContain('PRIVATE KEY');
    expect(clientTlsOf(E, I, false, { ca_cert: pki.caCert })).toBeUndefined();
  });

  test('tls_cert without tls_key is refused naming both', () => {
    expect(errorOf(() => clientTlsOf(E, I, true, { tls_cert: pki.clientCert })).message).toContain(
      'x.items: tls_cert and tls_key go together',
    );
  });
});
