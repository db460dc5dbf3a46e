/**
 * Mutual TLS for a simulated cluster: the same PEM files written into the Coordinator's MindIE
 * `tls_config` and into each engine's `pdlink.tls`, so every listener demands a client certificate
 * and every leg presents one. Pure functions over a config object, kept apart from the launcher so
 * the two file layouts can be read side by side.
 */
import type { SimClusterTls } from './cluster-options.ts';

/** The Coordinator's file with MindIE's tls_config switched on for both listeners and the engine legs. */
export function coordinatorConfigOf(config: Record<string, unknown>, tls: SimClusterTls | undefined): Record<string, unknown> {
  if (tls === undefined) return config;
  const server = { ca_cert: tls.caCert, tls_cert: tls.serverCert, tls_key: tls.serverKey };
  const client = { ca_cert: tls.caCert, tls_cert: tls.clientCert, tls_key: tls.clientKey };
  return {
    ...config,
    tls_config: {
      controller_server_tls_enable: true,
      controller_server_tls_items: server,
      request_server_tls_enable: true,
      request_server_tls_items: server,
      mindie_client_tls_enable: true,
      mindie_client_tls_items: client,
    },
  };
}

/** An engine's file with `pdlink.tls` on for both listeners and its calls to other engines. */
export function withEngineTls(config: Record<string, unknown>, tls: SimClusterTls | undefined): Record<string, unknown> {
  if (tls === undefined) return config;
  const server = { ca_cert: tls.caCert, tls_cert: tls.serverCert, tls_key: tls.serverKey };
  const client = { ca_cert: tls.caCert, tls_cert: tls.clientCert, tls_key: tls.clientKey };
  const pdlink = (config['pdlink'] ?? {}) as Record<string, unknown>;
  return {
    ...config,
    pdlink: {
      ...pdlink,
      tls: {
        management_tls_enable: true,
        management_tls_items: server,
        inference_tls_enable: true,
        inference_tls_items: server,
        client_tls_enable: true,
        client_tls_items: client,
      },
    },
  };
}
