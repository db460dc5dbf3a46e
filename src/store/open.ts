/**
 * Opens the store the settings name: etcd when endpoints are given, else the in-memory default.
 * The etcd client (gRPC, protobuf) is loaded only when etcd is named: imported up front it holds
 * about 17 MiB of RSS in every Coordinator and controller, most of which run without it
 * (bench/results/rss.md).
 */
import { MemoryStore } from './memory.ts';
import type { Store } from './store.ts';

export interface OpenStoreSettings {
  readonly endpoints: readonly string[];
  readonly cluster: string;
  /** etcd history older than this is compacted (default 0: not by this process). */
  readonly compactionSeconds?: number;
}

/**
 * @example const store = await openStore({ endpoints: ['http://127.0.0.1:2379'], cluster: 'default' });
 */
export async function openStore(settings: OpenStoreSettings | undefined): Promise<Store> {
  if (settings === undefined) return new MemoryStore();
  const { EtcdStore } = await import('./etcd.ts');
  return new EtcdStore({ endpoints: settings.endpoints, cluster: settings.cluster, compactionSeconds: settings.compactionSeconds ?? 0 });
}
