/**
 * Test doubles for the scheduler's inputs: a cluster view that applies full snapshots as diffs
 * (as the registry does, without wire validation) and a load source whose reservations the test
 * sets. Used by the scheduler's unit tests and its benchmark.
 */
import type { ClusterView, Instance, InstanceRole, RegistryDiff } from '../cluster/instance.ts';
import type { LoadSource, Reservations } from './loads.ts';

export interface NodeSpec {
  id: number;
  role: InstanceRole;
  group?: number;
  /** D: the P ids it lists; P: the D ids (ignored by the scheduler). */
  peers?: readonly number[];
  totalSlots?: number;
  availSlots?: number;
  totalBlocks?: number;
  availBlocks?: number;
  blockSize?: number;
}

/**
 * A full `Instance` from the fields a test sets (defaults: group 0, 100 slots and 1000 blocks, all free).
 * @example node({ id: 1, role: 'decode', peers: [0] })
 */
export function node(spec: NodeSpec): Instance {
  const totalSlots = spec.totalSlots ?? 100;
  const totalBlocks = spec.totalBlocks ?? 1000;
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
    label: spec.role === 'decode' ? 3 : 2,
    role: spec.role,
    availSlots: spec.availSlots ?? totalSlots,
    availBlocks: spec.availBlocks ?? totalBlocks,
    peers: spec.peers ?? [],
    wire: {},
  };
}

export class TestCluster implements ClusterView {
  #instances = new Map<number, Instance>();
  readonly #listeners = new Set<(diff: RegistryDiff) => void>();
  #generation = 0;

  constructor(specs: readonly NodeSpec[] = []) {
    for (const spec of specs) this.#instances.set(spec.id, node(spec));
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

  /**
   * Replaces the topology by a full snapshot and emits the diff (a role change: removal plus
   * addition; unchanged instances are left out).
   * @example cluster.refresh([{ id: 0, role: 'prefill' }, { id: 1, role: 'decode', peers: [0] }]);
   */
  refresh(specs: readonly NodeSpec[]): RegistryDiff {
    const next = new Map(specs.map((s) => [s.id, node(s)] as const));
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
    return diff;
  }

  /**
   * Changes some fields of one instance (a refresh that updates only it).
   * @example cluster.patch({ id: 0, role: 'prefill', availSlots: 0 });
   */
  patch(spec: NodeSpec): void {
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

function specOf(i: Instance): NodeSpec {
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

/** Reservations the test sets; every change is announced like the ledger does. */
export class TestLoads implements LoadSource {
  readonly #reserved = new Map<number, Reservations>();
  readonly #listeners = new Set<(id: number) => void>();

  load(id: number): Reservations | undefined {
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
