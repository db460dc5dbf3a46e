/**
 * MindIE's TLS item set (`*_tls_items` in `ms_coordinator.json`), used for every pdlink listener and
 * outgoing client: the same five keys everywhere, each a file path.
 */
import * as v from 'valibot';

const Path = v.pipe(v.string('must be a file path'), v.minLength(1, 'must be a file path'));

export const TlsItems = v.looseObject({
  /** Trusted CA certificates (PEM): a listener verifies client certificates with it, a client the server's. */
  ca_cert: v.optional(Path),
  tls_cert: v.optional(Path),
  tls_key: v.optional(Path),
  /** A file holding the passphrase of an encrypted `tls_key`. */
  tls_passwd: v.optional(Path),
  /** A PEM CRL: certificates it lists are refused. */
  tls_crl: v.optional(Path),
});

export type TlsItems = v.InferOutput<typeof TlsItems>;
