/**
 * Reads a MindIE TLS item set (`ca_cert`, `tls_cert`, `tls_key`, `tls_passwd`, `tls_crl`) into the PEM
 * text Bun wants, for a listener or an outgoing client. Everything fails closed at start: a named file
 * that is missing, unreadable, empty or not what its key says stops the start with a ConfigError naming
 * the key, so a typo can never leave a listener open without the client certificates it was meant to
 * require. The passphrase is never part of a message.
 */
import { createPrivateKey, X509Certificate } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { ConfigError } from '../core/errors.ts';
import type { ClientTlsOptions, ServerTlsOptions } from '../platform/tls-options.ts';
import { platform } from '../platform/index.ts';
import type { TlsItems } from '../schema/tls-items.ts';

/**
 * A listener's TLS, or undefined when `enabled` is not true. With `ca_cert` the listener requests a
 * client certificate and refuses a connection without one that chains to it (and, with `tls_crl`,
 * is not revoked).
 * @example serverTlsOf('tls_config.controller_server_tls_enable', 'tls_config.controller_server_tls_items', true, items)
 */
export function serverTlsOf(
  enableKey: string,
  itemsKey: string,
  enabled: boolean | undefined,
  items: TlsItems | undefined,
): ServerTlsOptions | undefined {
  if (enabled !== true) return undefined;
  if (items?.tls_cert === undefined || items.tls_key === undefined) {
    throw new ConfigError(`${itemsKey}: tls_cert and tls_key are required when ${enableKey} is true`);
  }
  const identity = readIdentity(itemsKey, items);
  const trust = readTrust(itemsKey, items);
  const tls: ServerTlsOptions = trust.ca === undefined ? identity : { ...identity, ...trust, requestCert: true, rejectUnauthorized: true };
  refuseUnenforced(itemsKey, platform.unsupportedServerTls(tls));
  return tls;
}

/**
 * An outgoing client's TLS, or undefined when `enabled` is not true: the CA that verifies the server
 * (the system's when `ca_cert` is absent) and the client certificate to present (both `tls_cert` and
 * `tls_key`, or neither).
 * @example clientTlsOf('tls_config.mindie_client_tls_enable', 'tls_config.mindie_client_tls_items', true, items)
 */
export function clientTlsOf(
  enableKey: string,
  itemsKey: string,
  enabled: boolean | undefined,
  items: TlsItems | undefined,
): ClientTlsOptions | undefined {
  if (enabled !== true) return undefined;
  const given = items ?? {};
  if ((given.tls_cert === undefined) !== (given.tls_key === undefined)) {
    throw new ConfigError(`${itemsKey}: tls_cert and tls_key go together (${enableKey} is true)`);
  }
  const identity = given.tls_cert === undefined ? {} : readIdentity(itemsKey, given);
  const tls: ClientTlsOptions = { ...identity, ...readTrust(itemsKey, given) };
  refuseUnenforced(itemsKey, platform.unsupportedClientTls(tls));
  return tls;
}

/** The item each TLS field comes from, to name it when the runtime cannot enforce the field. */
const ITEM_OF: Readonly<Record<string, string>> = { ca: 'ca_cert', crl: 'tls_crl', requestCert: 'ca_cert', rejectUnauthorized: 'ca_cert' };

/**
 * Stops the start when the runtime cannot enforce a setting that was turned on: each one exists to
 * refuse some peers (no client certificate, a revoked one), so running without it would let them in.
 */
function refuseUnenforced(itemsKey: string, fields: readonly string[]): void {
  const first = fields[0];
  if (first === undefined) return;
  const item = `${itemsKey}.${ITEM_OF[first] ?? first}`;
  throw new ConfigError(
    `${item}: this platform (${platform.name}) cannot enforce ${first === 'crl' ? 'a certificate revocation list' : 'client certificates'} here; ` +
      `drop the setting or run pdlink on Bun`,
  );
}

function readIdentity(itemsKey: string, items: TlsItems): { cert: string; key: string; passphrase?: string } {
  const cert = readPemFile(`${itemsKey}.tls_cert`, items.tls_cert!);
  checkCertificates(`${itemsKey}.tls_cert`, cert);
  const key = readPemFile(`${itemsKey}.tls_key`, items.tls_key!);
  const passphrase = items.tls_passwd === undefined ? undefined : readPassphrase(`${itemsKey}.tls_passwd`, items.tls_passwd);
  try {
    createPrivateKey(passphrase === undefined ? { key } : { key, passphrase });
  } catch {
    if (passphrase !== undefined) throw new ConfigError(`${itemsKey}.tls_passwd: does not decrypt ${itemsKey}.tls_key`);
    const encrypted = key.includes('ENCRYPTED');
    throw new ConfigError(
      encrypted
        ? `${itemsKey}.tls_key: the key is encrypted; name the file holding its passphrase in ${itemsKey}.tls_passwd`
        : `${itemsKey}.tls_key: not a PEM private key`,
    );
  }
  return passphrase === undefined ? { cert, key } : { cert, key, passphrase };
}

function readTrust(itemsKey: string, items: TlsItems): { ca?: string; crl?: string } {
  if (items.ca_cert === undefined) {
    if (items.tls_crl !== undefined)
      throw new ConfigError(`${itemsKey}.tls_crl: needs ${itemsKey}.ca_cert (a CRL revokes certificates of that CA)`);
    return {};
  }
  const ca = readPemFile(`${itemsKey}.ca_cert`, items.ca_cert);
  checkCertificates(`${itemsKey}.ca_cert`, ca);
  if (items.tls_crl === undefined) return { ca };
  const crl = readPemFile(`${itemsKey}.tls_crl`, items.tls_crl);
  if (!crl.includes('-----BEGIN X509 CRL-----')) throw new ConfigError(`${itemsKey}.tls_crl: ${items.tls_crl} is not a PEM CRL`);
  return { ca, crl };
}

function readPemFile(key: string, path: string): string {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (cause) {
    throw new ConfigError(`${key}: cannot read ${path}: ${(cause as NodeJS.ErrnoException).code ?? String(cause)}`);
  }
  if (text.trim() === '') throw new ConfigError(`${key}: ${path} is empty`);
  return text;
}

/** The passphrase file's content without its final newline; never quoted in a message. */
function readPassphrase(key: string, path: string): string {
  const text = readPemFile(key, path).replace(/\r?\n$/, '');
  if (text === '') throw new ConfigError(`${key}: ${path} is empty`);
  return text;
}

function checkCertificates(key: string, pem: string): void {
  try {
    new X509Certificate(pem);
  } catch {
    throw new ConfigError(`${key}: not a PEM certificate`);
  }
}
