/**
 * Opens the store the settings name: etcd when endpoints are given, else the in-memory default.
 */
import { EtcdStore } from './etcd.ts';
import { MemoryStore } from './memory.ts';
import type { Store } from './store.ts';

export interface OpenStoreSettings {
  readonly endpoints: readonly string[];
  readonly cluster: string;
}

/**
 * @example const store = openStore({ endpoints: ['http://127.0.0.1:2379'], cluster: 'default' });
 */
export function openStore(settings: OpenStoreSettings | undefined): Store {
  if (settings === undefined) return new MemoryStore();
  return new EtcdStore({ endpoints: settings.endpoints, cluster: settings.cluster });
}
