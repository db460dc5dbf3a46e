/**
 * A minimal in-memory `ClusterView` for the ledger's tests and benchmark: applies full snapshots
 * as diffs the way the registry does, without any wire validation.
 */
import type { ClusterView, Instance, InstanceRole, RegistryDiff } from '../cluster/instance.ts';

/** The fields a ledger test cares about; everything else gets a plausible default. */
export interface FakeInstanceSpec {
  id: number;
  role?: InstanceRole;
  availSlots: number;
  availBlocks: number;
}

/**
 * Builds a full `Instance` from the few fields a test sets.
 * @example fakeInstance({ id: 0, role: 'prefill', availSlots: 8, availBlocks: 100 })
 */
export function fakeInstance(spec: FakeInstanceSpec): Instance {
  const role = spec.role ?? 'prefill';
  return {
    id: spec.id,
    ip: '127.0.0.1',
    port: 1025,
    metricPort: 1026,
    modelName: 'test-model',
    groupId: 0,
    maxSeqLen: 2048,
    maxOutputLen: 512,
    totalSlots: Math.max(1, spec.availSlots),
    totalBlocks: Math.max(1, spec.availBlocks),
    blockSize: 128,
    label: role === 'decode' ? 3 : 2,
    role,
    availSlots: spec.availSlots,
    availBlocks: spec.availBlocks,
    peers: [],
    wire: {},
  };
}

export class FakeCluster implements ClusterView {
  generation = 0;
  readonly #instances = new Map<number, Instance>();
  readonly #listeners = new Set<(diff: RegistryDiff) => void>();

  get(id: number): Instance | undefined {
    return this.#instances.get(id);
  }

  all(): readonly Instance[] {
    return [...this.#instances.values()];
  }

  byRole(role: InstanceRole): readonly Instance[] {
    return this.all().filter((i) => i.role === role);
  }

  onChange(listener: (diff: RegistryDiff) => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  get listenerCount(): number {
    return this.#listeners.size;
  }

  /**
   * Replaces the topology with `specs` (a full snapshot) and emits the diff; a role change is a removal plus an addition.
   * @example cluster.refresh([{ id: 0, role: 'prefill', availSlots: 8, availBlocks: 100 }]);
   */
  refresh(specs: readonly FakeInstanceSpec[]): RegistryDiff {
    const next = new Map(specs.map((s) => [s.id, fakeInstance(s)] as const));
    const added: Instance[] = [];
    const removed: Instance[] = [];
    const updated: { before: Instance; after: Instance }[] = [];
    for (const [id, before] of this.#instances) {
      const after = next.get(id);
      if (after === undefined || after.role !== before.role) removed.push(before);
    }
    for (const [id, after] of next) {
      const before = this.#instances.get(id);
      if (before === undefined || before.role !== after.role) added.push(after);
      else updated.push({ before, after });
    }
    this.#instances.clear();
    for (const [id, instance] of next) this.#instances.set(id, instance);
    this.generation++;
    const diff: RegistryDiff = { generation: this.generation, added, updated, removed };
    for (const listener of this.#listeners) listener(diff);
    return diff;
  }
}
