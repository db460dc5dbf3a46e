/**
 * Throwaway certificates for the TLS tests, made with the machine's openssl: a CA, a server
 * certificate for 127.0.0.1 and localhost, a good client, a client signed by a rogue CA, a revoked
 * client with the CRL that lists it, and a server key encrypted with a passphrase. Each call makes a
 * fresh directory, so tests never share keys.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export interface TestPki {
  readonly dir: string;
  /** Paths of the PEM files. */
  readonly caCert: string;
  readonly serverCert: string;
  readonly serverKey: string;
  readonly clientCert: string;
  readonly clientKey: string;
  readonly rogueCert: string;
  readonly rogueKey: string;
  readonly revokedCert: string;
  readonly revokedKey: string;
  readonly crl: string;
  /** The server key encrypted with `passphrase`. */
  readonly encryptedServerKey: string;
  readonly passphrase: string;
}

function openssl(dir: string, args: string[]): void {
  // node:child_process, so the Deno suite makes its certificates the same way.
  const run = spawnSync('openssl', args, { cwd: dir, stdio: ['ignore', 'pipe', 'pipe'] });
  if (run.status !== 0) throw new Error(`openssl ${args.join(' ')}: ${run.stderr?.toString() ?? run.error}`);
}

function issue(dir: string, name: string, caName: string, ext: string): void {
  openssl(dir, ['req', '-new', '-newkey', 'rsa:2048', '-nodes', '-keyout', `${name}.key`, '-out', `${name}.csr`, '-subj', `/CN=${name}`]);
  writeFileSync(join(dir, `${name}.ext`), ext);
  openssl(dir, [
    'x509',
    '-req',
    '-in',
    `${name}.csr`,
    '-CA',
    `${caName}.crt`,
    '-CAkey',
    `${caName}.key`,
    '-CAcreateserial',
    '-days',
    '2',
    '-sha256',
    '-extfile',
    `${name}.ext`,
    '-out',
    `${name}.crt`,
  ]);
}

/**
 * Generates the whole set in a new temporary directory (about a second of openssl). The server
 * certificate names 127.0.0.1, 127.0.0.2 (the agent's default management address), localhost and `ips`.
 * @example const pki = makeTestPki(); Bun.serve({ tls: { cert: Bun.file(pki.serverCert), ... } });
 */
export function makeTestPki(ips: readonly string[] = []): TestPki {
  const dir = mkdtempSync(join(tmpdir(), 'pdlink-pki-'));
  const caExt = 'basicConstraints=critical,CA:TRUE\nkeyUsage=critical,keyCertSign,cRLSign\n';
  for (const ca of ['ca', 'rogue-ca']) {
    writeFileSync(join(dir, `${ca}.ext`), caExt);
    openssl(dir, [
      'req',
      '-x509',
      '-newkey',
      'rsa:2048',
      '-nodes',
      '-keyout',
      `${ca}.key`,
      '-out',
      `${ca}.crt`,
      '-days',
      '2',
      '-subj',
      `/CN=pdlink test ${ca}`,
      '-addext',
      'basicConstraints=critical,CA:TRUE',
      '-addext',
      'keyUsage=critical,keyCertSign,cRLSign',
    ]);
  }
  const names = ['IP:127.0.0.1', 'IP:127.0.0.2', 'DNS:localhost', ...ips.map((ip) => `IP:${ip}`)].join(',');
  issue(dir, 'server', 'ca', `subjectAltName=${names}\nextendedKeyUsage=serverAuth,clientAuth\n`);
  issue(dir, 'client', 'ca', 'extendedKeyUsage=clientAuth\n');
  issue(dir, 'revoked', 'ca', 'extendedKeyUsage=clientAuth\n');
  issue(dir, 'rogue', 'rogue-ca', 'extendedKeyUsage=clientAuth\n');
  // A minimal `openssl ca` database, only to revoke one certificate and sign the CRL.
  writeFileSync(join(dir, 'index.txt'), '');
  writeFileSync(join(dir, 'crlnumber'), '01\n');
  writeFileSync(
    join(dir, 'ca.cnf'),
    `[ca]\ndefault_ca=test\n[test]\ndatabase=${join(dir, 'index.txt')}\ncrlnumber=${join(dir, 'crlnumber')}\n` +
      `default_md=sha256\ndefault_crl_days=2\n`,
  );
  openssl(dir, ['ca', '-config', 'ca.cnf', '-keyfile', 'ca.key', '-cert', 'ca.crt', '-revoke', 'revoked.crt']);
  openssl(dir, ['ca', '-config', 'ca.cnf', '-keyfile', 'ca.key', '-cert', 'ca.crt', '-gencrl', '-out', 'ca.crl']);
  const passphrase = 'test-key-passphrase';
  openssl(dir, ['pkey', '-in', 'server.key', '-aes256', '-passout', `pass:${passphrase}`, '-out', 'server-encrypted.key']);
  const at = (f: string) => join(dir, f);
  return {
    dir,
    caCert: at('ca.crt'),
    serverCert: at('server.crt'),
    serverKey: at('server.key'),
    clientCert: at('client.crt'),
    clientKey: at('client.key'),
    rogueCert: at('rogue.crt'),
    rogueKey: at('rogue.key'),
    revokedCert: at('revoked.crt'),
    revokedKey: at('revoked.key'),
    crl: at('ca.crl'),
    encryptedServerKey: at('server-encrypted.key'),
    passphrase,
  };
}

/**
 * The `tls` option of Bun's fetch for a client presenting `cert`/`key` (or none) and trusting the test CA.
 * @example await fetch(url, { tls: clientTls(pki, 'client') });
 */
export function clientTls(pki: TestPki, who: 'client' | 'rogue' | 'revoked' | 'none'): { ca: string; cert?: string; key?: string } {
  const ca = readFileSync(pki.caCert, 'utf8');
  if (who === 'none') return { ca };
  const cert = readFileSync(who === 'client' ? pki.clientCert : who === 'rogue' ? pki.rogueCert : pki.revokedCert, 'utf8');
  const key = readFileSync(who === 'client' ? pki.clientKey : who === 'rogue' ? pki.rogueKey : pki.revokedKey, 'utf8');
  return { ca, cert, key };
}
