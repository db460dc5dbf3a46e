/**
 * The domain shape of one P/D instance as the cluster registry holds it, and the diff events the
 * registry emits. Consumers (link manager, scheduler, KV ledger) depend on these types only.
 */
import { type LabelCode, ROLE_BY_CODE, type RoleCode } from '../schema/refresh-limits.ts';

// The wire codes belong to the refresh format (schema/); the registry's types are named by them.
export { LABEL_BY_CODE, ROLE_BY_CODE, type LabelCode, type RoleCode } from '../schema/refresh-limits.ts';

export type InstanceRole = (typeof ROLE_BY_CODE)[RoleCode];

export interface Instance {
  readonly id: number;
  readonly ip: string;
  readonly port: number;
  readonly metricPort: number;
  readonly modelName: string;
  readonly groupId: number;
  readonly maxSeqLen: number;
  readonly maxOutputLen: number;
  readonly totalSlots: number;
  readonly totalBlocks: number;
  readonly blockSize: number;
  readonly label: LabelCode;
  readonly role: InstanceRole;
  /** Last reported free slots/blocks (`dynamic_info`); local reservations are the ledger's business. */
  readonly availSlots: number;
  readonly availBlocks: number;
  /** Ids of linked peers: P ids for a decode instance, D ids for a prefill instance (may be empty). */
  readonly peers: readonly number[];
  /** The instance object exactly as last accepted on the wire, unknown fields included. */
  readonly wire: Readonly<Record<string, unknown>>;
}

/** What one accepted refresh changed. A role change appears as a removal plus an addition. */
export interface RegistryDiff {
  /** Increments with every accepted refresh, changed or not. */
  readonly generation: number;
  readonly added: readonly Instance[];
  /**
   * Instances that changed, with what they were. One whose free slots and blocks alone moved (between
   * two snapshots of only the schema's keys, the Controller's usual refresh) is updated in place:
   * its `before` is its `after`, already reading the new loads.
   */
  readonly updated: readonly { readonly before: Instance; readonly after: Instance }[];
  readonly removed: readonly Instance[];
}

/** Read side of the registry, as its consumers see it. */
export interface ClusterView {
  get(id: number): Instance | undefined;
  all(): readonly Instance[];
  byRole(role: InstanceRole): readonly Instance[];
  /** Subscribes to diffs; returns the unsubscribe function. Listeners run synchronously after apply. */
  onChange(listener: (diff: RegistryDiff) => void): () => void;
  /**
   * Subscribes to every accepted refresh, changed or not: the Controller listing an instance again
   * is news even when nothing about it changed. Optional: a view without it never reports one.
   */
  onRefresh?(listener: (generation: number) => void): () => void;
}
