/**
 * A `pdlink controller` process over a simulated cluster launched unwired (`wire: false`): its
 * topology file written from the engines' addresses, and the process started on it. The demo,
 * the controller's end-to-end tests and its benchmark use it.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { SimCluster, SimEngineHandle } from './cluster.ts';
import { spawnListening, type ManagedProcess } from './process.ts';
import { pdlinkModule } from '../../platform/module-path.ts';

export interface SimController {
  readonly process: ManagedProcess;
  /** `http://…` of the controller's management listener. */
  readonly url: string;
  readonly topologyPath: string;
}

/**
 * Writes (or rewrites) the topology file of the given engines.
 * @example writeTopology(cluster, path, cluster.engines, { cluster_synchronization_seconds: 0.2 });
 */
export function writeTopology(
  cluster: SimCluster,
  path: string,
  engines: readonly SimEngineHandle[],
  timing: Record<string, number>,
): void {
  const body: Record<string, unknown> = {
    coordinators: [cluster.coordinatorUrl],
    timing,
    instances: engines.map((e) => cluster.topologyEntry(e)),
  };
  const tls = cluster.tlsFiles;
  if (tls !== undefined) {
    // The controller's listener and its calls use the cluster's certificates, like every other process.
    body['tls'] = {
      server_tls_enable: true,
      server_tls_items: { ca_cert: tls.caCert, tls_cert: tls.serverCert, tls_key: tls.serverKey },
      client_tls_enable: true,
      client_tls_items: { ca_cert: tls.caCert, tls_cert: tls.clientCert, tls_key: tls.clientKey },
    };
  }
  writeFileSync(path, JSON.stringify(body, null, 2));
}

/**
 * Writes a topology file of the engines and starts a controller on it.
 * @example const controller = await startSimController(cluster, cluster.engines, { instance_heartbeat_timeout_seconds: 1 });
 */
export async function startSimController(
  cluster: SimCluster,
  engines: readonly SimEngineHandle[],
  timing: Record<string, number>,
  onLine?: (line: string) => void,
): Promise<SimController> {
  const topologyPath = join(cluster.dir, 'topology.json');
  writeTopology(cluster, topologyPath, engines, timing);
  const proc = await spawnListening({
    name: 'controller',
    command: [process.execPath, pdlinkModule('main'), 'controller', '--config', topologyPath, '--manage_port', '0'],
    listeners: ['controller'],
    ...(onLine === undefined ? {} : { onLine }),
  });
  return { process: proc, url: proc.urls['controller']!, topologyPath };
}
