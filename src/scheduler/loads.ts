/**
 * Where the scheduler's loads come from: what each instance last reported free (`dynamic_info`,
 * via the registry) minus what this process has reserved there and not yet released (the KV
 * ledger). The scheduler needs only the reservations and a signal when they change.
 */
import type { Instance } from '../cluster/instance.ts';

/** Capacity this process holds on one instance. */
export interface ReservedCapacity {
  readonly reservedSlots: number;
  readonly reservedBlocks: number;
}

/** The narrow view of the KV ledger the scheduler reads. */
export interface LoadSource {
  /** Current reservations on an instance; undefined when none are known. */
  load(id: number): ReservedCapacity | undefined;
  /** Subscribes to reservation changes of one instance at a time; returns the unsubscribe function. */
  onLoadChange(listener: (id: number) => void): () => void;
}

/** A load source for a Coordinator without a ledger: loads are the reported values alone. */
export const NO_RESERVATIONS: LoadSource = Object.freeze({
  load: () => undefined,
  onLoadChange: () => () => {},
});

/** Effective capacity of one instance, and the load the scheduler orders by. */
export interface Capacity {
  readonly freeSlots: number;
  readonly freeBlocks: number;
  /**
   * Utilisation of the busier resource, in [0, 1]: 1 − free/total for slots and for blocks, the
   * larger of the two. Exactly 1 when either is exhausted, so a full instance sorts after every
   * instance with room, whatever the sizes.
   */
  readonly load: number;
  /** The per-instance request cap alone keeps it from taking a request: it has reported room, but this process has `maxRequests` on it. */
  readonly capped: boolean;
}

/**
 * Effective free capacity (reported avail − local reservations, never below 0, and no more slots
 * than `maxRequests` − local reservations: `request_limit.single_node_max_requests`) and load.
 * @example capacityOf(instance, ledger.instanceLoad(instance.id)).freeSlots
 */
export function capacityOf(instance: Instance, reserved: ReservedCapacity | undefined, maxRequests = Infinity): Capacity {
  return capacityInto({ freeSlots: 0, freeBlocks: 0, load: 1, capped: false }, instance, reserved, maxRequests);
}

/**
 * capacityOf written into `target`'s fields rather than a new object: the scheduler keeps each
 * node's capacity on the node, and a refresh where every instance changed reads thousands.
 * @example capacityInto(node, node.instance, loads.load(node.id), maxRequests); node.load
 */
export function capacityInto<T extends { -readonly [K in keyof Capacity]: Capacity[K] }>(
  target: T,
  instance: Instance,
  reserved: ReservedCapacity | undefined,
  maxRequests = Infinity,
): T {
  const reservedSlots = reserved?.reservedSlots ?? 0;
  const reportedSlots = Math.max(0, instance.availSlots - reservedSlots);
  const freeSlots = Math.min(reportedSlots, Math.max(0, maxRequests - reservedSlots));
  const freeBlocks = Math.max(0, instance.availBlocks - (reserved?.reservedBlocks ?? 0));
  target.freeSlots = freeSlots;
  target.freeBlocks = freeBlocks;
  if (freeSlots === 0 || freeBlocks === 0) {
    target.load = 1;
    target.capped = freeSlots === 0 && reportedSlots > 0 && freeBlocks > 0;
    return target;
  }
  // The registry guarantees totals > 0 and avail ≤ total; clamp anyway so a load stays in [0, 1).
  const slotLoad = 1 - Math.min(1, freeSlots / instance.totalSlots);
  const blockLoad = 1 - Math.min(1, freeBlocks / instance.totalBlocks);
  target.load = Math.max(slotLoad, blockLoad);
  target.capped = false;
  return target;
}
