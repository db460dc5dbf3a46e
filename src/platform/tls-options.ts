/**
 * The shapes TLS settings take once read from disk, shared by the listeners (cli/), the proxy's legs
 * and the controller's calls, so no layer below config/ has to know where the PEM text came from.
 */

/** What Bun.serve's `tls` option gets for one listener. */
export interface ServerTlsOptions {
  readonly cert: string;
  readonly key: string;
  readonly passphrase?: string;
  /** Trusted client CAs; when present the listener requests a client certificate and refuses one that fails. */
  readonly ca?: string;
  /** Revoked client certificates, checked during the handshake. */
  readonly crl?: string;
  readonly requestCert?: boolean;
  readonly rejectUnauthorized?: boolean;
}

/** What Bun's fetch gets as `tls` for an outgoing https call: the CA to verify with, and our certificate. */
export interface ClientTlsOptions {
  readonly ca?: string;
  readonly cert?: string;
  readonly key?: string;
  readonly passphrase?: string;
  readonly crl?: string;
}
