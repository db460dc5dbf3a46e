/**
 * A `ClusterView` test double for the consumers of the registry (ledger, scheduler, proxy, their
 * benchmarks): applies full snapshots as diffs the way the registry does, without wire validation.
 */
import type { ClusterView, Instance, InstanceRole, RegistryDiff } from '../../src/cluster/instance.ts';

/** The fields a test cares about; everything else gets a plausible default. */
export interface TestInstanceSpec {
  id: number;
  /** Default prefill. */
  role?: InstanceRole;
  group?: number;
  /** D: the P ids it lists; P: the D ids (ignored by the scheduler). */
  peers?: readonly number[];
  totalSlots?: number;
  availSlots?: number;
  totalBlocks?: number;
  availBlocks?: number;
  blockSize?: number;
}

/** Totals when a spec names neither the total nor a larger free amount. */
const DEFAULT_TOTAL_SLOTS = 100;
const DEFAULT_TOTAL_BLOCKS = 1000;

/**
 * A full `Instance` from the fields a test sets (defaults: prefill, group 0, 128-token blocks, all free;
 * totals of 100 slots and 1000 blocks, or the free amount when that is larger, as the registry requires).
 * @example testInstance({ id: 1, role: 'decode', peers: [0] })
 */
export function testInstance(spec: TestInstanceSpec): Instance {
  const role = spec.role ?? 'prefill';
  const totalSlots = spec.totalSlots ?? Math.max(DEFAULT_TOTAL_SLOTS, spec.availSlots ?? 0);
  const totalBlocks = spec.totalBlocks ?? Math.max(DEFAULT_TOTAL_BLOCKS, spec.availBlocks ?? 0);
  return {
    id: spec.id,
    ip: '127.0.0.1',
    port: 1025,
    metricPort: 1026,
    modelName: 'test-model',
    groupId: spec.group ?? 0,
    maxSeqLen: 2048,
    maxOutputLen: 512,
    totalSlots,
    totalBlocks,
    blockSize: spec.blockSize ?? 128,
    label: role === 'decode' ? 3 : 2,
    role,
    availSlots: spec.availSlots ?? totalSlots,
    availBlocks: spec.availBlocks ?? totalBlocks,
    peers: spec.peers ?? [],
    wire: {},
  };
}

export class TestCluster implements ClusterView {
  #instances = new Map<number, Instance>();
  readonly #listeners = new Set<(diff: RegistryDiff) => void>();
  readonly #refreshListeners = new Set<(generation: number) => void>();
  #generation = 0;

  /**
   * Starts with `specs` in place, without a diff and at generation 0 (no refresh received yet).
   * @example new TestCluster([{ id: 0, role: 'prefill' }, { id: 1, role: 'decode', peers: [0] }])
   */
  constructor(specs: readonly TestInstanceSpec[] = []) {
    for (const spec of specs) this.#instances.set(spec.id, testInstance(spec));
  }

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

  onRefresh(listener: (generation: number) => void): () => void {
    this.#refreshListeners.add(listener);
    return () => this.#refreshListeners.delete(listener);
  }

  /** Refreshes applied so far, as the registry counts them. */
  get generation(): number {
    return this.#generation;
  }

  get listenerCount(): number {
    return this.#listeners.size;
  }

  /**
   * Replaces the topology by a full snapshot and emits the diff (a role change: removal plus
   * addition; unchanged instances are left out).
   * @example cluster.refresh([{ id: 0, role: 'prefill', availSlots: 8, availBlocks: 100 }, { id: 1, role: 'decode', peers: [0] }]);
   */
  refresh(specs: readonly TestInstanceSpec[]): RegistryDiff {
    const next = new Map(specs.map((s) => [s.id, testInstance(s)] as const));
    const added: Instance[] = [];
    const updated: { before: Instance; after: Instance }[] = [];
    const removed: Instance[] = [];
    for (const [id, before] of this.#instances) {
      const after = next.get(id);
      if (after === undefined || after.role !== before.role) removed.push(before);
    }
    for (const [id, after] of next) {
      const before = this.#instances.get(id);
      if (before === undefined || before.role !== after.role) added.push(after);
      // As the registry does: an instance whose fields did not change is not in the diff.
      else if (JSON.stringify(before) !== JSON.stringify(after)) updated.push({ before, after });
      else next.set(id, before);
    }
    this.#instances = next;
    const diff: RegistryDiff = { generation: ++this.#generation, added, updated, removed };
    for (const listener of this.#listeners) listener(diff);
    for (const listener of this.#refreshListeners) listener(diff.generation);
    return diff;
  }

  /**
   * Changes some fields of one instance, or adds it (a refresh that updates only it).
   * @example cluster.patch({ id: 0, role: 'prefill', availSlots: 0 });
   */
  patch(spec: TestInstanceSpec): void {
    const specs = [...this.#instances.values()].map((i) => (i.id === spec.id ? spec : specOf(i)));
    if (!this.#instances.has(spec.id)) specs.push(spec);
    this.refresh(specs);
  }

  /**
   * Drops one instance (a refresh without it).
   * @example cluster.remove(3);
   */
  remove(id: number): void {
    this.refresh([...this.#instances.values()].filter((i) => i.id !== id).map(specOf));
  }
}

function specOf(i: Instance): TestInstanceSpec {
  return {
    id: i.id,
    role: i.role,
    group: i.groupId,
    peers: i.peers,
    totalSlots: i.totalSlots,
    availSlots: i.availSlots,
    totalBlocks: i.totalBlocks,
    availBlocks: i.availBlocks,
    blockSize: i.blockSize,
  };
}
