/**
 * A load source for the scheduler's tests and benchmark whose reservations the test sets; the
 * cluster view they pair it with is `TestCluster` (src/cluster/testing.ts).
 */
import type { LoadSource, ReservedCapacity } from '../../src/scheduler/loads.ts';

/** Reservations the test sets; every change is announced like the ledger does. */
export class TestLoads implements LoadSource {
  readonly #reserved = new Map<number, ReservedCapacity>();
  readonly #listeners = new Set<(id: number) => void>();

  load(id: number): ReservedCapacity | undefined {
    return this.#reserved.get(id);
  }

  onLoadChange(listener: (id: number) => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  /**
   * Adds (or, negative, removes) reserved slots and blocks on an instance.
   * @example loads.reserve(0, 1, 16);
   */
  reserve(id: number, slots: number, blocks: number): void {
    const current = this.#reserved.get(id) ?? { reservedSlots: 0, reservedBlocks: 0 };
    this.#reserved.set(id, { reservedSlots: current.reservedSlots + slots, reservedBlocks: current.reservedBlocks + blocks });
    for (const listener of this.#listeners) listener(id);
  }

  get listenerCount(): number {
    return this.#listeners.size;
  }
}
