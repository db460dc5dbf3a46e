/**
 * The scheduler's indexes, kept current from registry diffs, ledger load changes and circuit
 * changes, so that a pick never looks at instances it will not use:
 * - group id → its prefill and decode nodes (to link a new P without a cluster scan);
 * - P ↔ D links: same group and D lists P among its peers (MindIE's rule);
 * - per P, a load-ordered pool of its linked D's that can take a request now;
 * - one load-ordered pool of the P's that can take a request now and have such a D.
 * Each change touches only the node and its links (≤ group size), never the whole cluster.
 */
import type { ClusterView, Instance, RegistryDiff } from '../cluster/instance.ts';
import { IdMap } from '../core/id-map.ts';
import type { CircuitBreakers } from './breakers.ts';
import { capacityInto, type LoadSource } from './loads.ts';
import { SchedulerNode } from './node.ts';
import { Pool } from './pool.ts';

/** Counts behind the "why not" of a failed pick. */
export interface TopologyCounts {
  readonly prefill: number;
  readonly decode: number;
  /** P's with at least one linked D. */
  readonly linkedPrefill: number;
  /** ... whose own circuit admits requests. */
  readonly healthyLinkedPrefill: number;
  /** ... and with at least one linked D whose circuit admits requests. */
  readonly pairedPrefill: number;
  /** ... and with room on P and on at least one such D: the pool a pick draws from. */
  readonly schedulablePrefill: number;
}

interface Group {
  readonly prefills: Set<SchedulerNode>;
  readonly decodes: Set<SchedulerNode>;
}

export interface TopologyOptions {
  cluster: ClusterView;
  loads: LoadSource;
  breakers: CircuitBreakers;
  /** Requests this process may have in flight on one instance (`single_node_max_requests`); default no cap. */
  maxRequests?: number;
  /** Called after a node left the index (removal or role change). */
  onRemove?: (node: SchedulerNode) => void;
}

/**
 * From this many nodes touched by one diff, pools are reordered once at the end (O(n) each) rather
 * than per node (O(log n) each); below it the per-node moves are cheaper than rebuilding a pool.
 */
const BATCHED_REORDER_MIN = 32;

export class Topology {
  /** The P's a pick draws from. */
  readonly prefills = new Pool<SchedulerNode>();
  readonly #nodes = new IdMap<SchedulerNode>();
  readonly #groups = new Map<number, Group>();
  readonly #loads: LoadSource;
  readonly #breakers: CircuitBreakers;
  readonly #onRemove: (node: SchedulerNode) => void;
  readonly #maxRequests: number;
  /** Nodes full only because of their request cap, to tell a 429 from a 503 without a cluster scan. */
  readonly #capped = new Set<SchedulerNode>();
  readonly #unsubscribe: (() => void)[];
  readonly #counts = { prefill: 0, decode: 0, linkedPrefill: 0, healthyLinkedPrefill: 0, pairedPrefill: 0 };
  readonly #queue: (RegistryDiff | number)[] = [];
  #busy = false;
  /** While a large diff is applied: the pools whose order is restored once at its end. */
  #unordered: Pool<SchedulerNode>[] | undefined;
  /** Numbers the diffs, so a node can tell whether the one under way has collected it already. */
  #stamp = 0;

  constructor(options: TopologyOptions) {
    this.#loads = options.loads;
    this.#breakers = options.breakers;
    this.#onRemove = options.onRemove ?? (() => {});
    this.#maxRequests = options.maxRequests ?? Infinity;
    this.#enqueue({ generation: 0, added: options.cluster.all(), updated: [], removed: [] });
    this.#unsubscribe = [
      options.cluster.onChange((diff) => this.#enqueue(diff)),
      options.loads.onLoadChange((id) => this.#enqueue(id)),
      options.breakers.onChange((event) => this.#enqueue(event.id)),
    ];
  }

  /**
   * The node of a registered prefill or decode instance.
   * @example topology.get(3)?.load
   */
  get(id: number): SchedulerNode | undefined {
    return this.#nodes.get(id);
  }

  /**
   * Every indexed node (prefill and decode), in no particular order.
   * @example for (const node of topology.nodes()) gauge.set(...)
   */
  nodes(): IterableIterator<SchedulerNode> {
    return this.#nodes.values();
  }

  /**
   * Whether some pair of admissible instances is kept apart only by request caps (a failed pick
   * is then a 429, not a 503).
   * @example if (topology.capsBlock()) reason = 'instance_cap';
   */
  capsBlock(): boolean {
    for (const node of this.#capped) {
      if (!node.admissible) continue;
      for (const other of node.links) if (other.admissible && (other.load < 1 || other.capped)) return true;
    }
    return false;
  }

  /**
   * The counters behind a failed pick's reason.
   * @example topology.counts().schedulablePrefill
   */
  counts(): TopologyCounts {
    return { ...this.#counts, schedulablePrefill: this.prefills.size };
  }

  /**
   * Stops following the cluster, the loads and the circuits.
   * @example topology.close();
   */
  close(): void {
    for (const off of this.#unsubscribe.splice(0)) off();
  }

  /**
   * Every change goes through here. A change that arrives while another is being applied (the
   * ledger or the circuits emitting while their state is read) waits in a queue and is applied
   * right after, in order, so the indexes are never observed half-updated.
   */
  #enqueue(change: RegistryDiff | number): void {
    this.#queue.push(change);
    if (this.#busy) return;
    this.#busy = true;
    try {
      for (let i = 0; i < this.#queue.length; i++) {
        const next = this.#queue[i] as RegistryDiff | number;
        if (typeof next === 'number') {
          const node = this.#nodes.get(next);
          if (node !== undefined) this.#refresh(node, false);
        } else {
          this.#applyDiff(next);
        }
      }
    } finally {
      this.#queue.length = 0;
      this.#busy = false;
    }
  }

  #applyDiff(diff: RegistryDiff): void {
    // Nodes of this diff are collected in arrays, each once (its stamp says it is in): a set of
    // thousands of objects costs more to fill than the rest of an all-changed refresh's work.
    const stamp = ++this.#stamp;
    const dirty: SchedulerNode[] = [];
    const touched: SchedulerNode[] = [];
    for (const instance of diff.removed) this.#remove(instance.id);
    for (const instance of diff.added) this.#upsert(instance, stamp, dirty, touched);
    for (const { after } of diff.updated) this.#upsert(after, stamp, dirty, touched);
    // Links only after every node of the diff is in place, so a P and the D that lists it can arrive together.
    for (const node of dirty) if (node.role === 'prefill' && this.#nodes.get(node.id) === node) this.#relinkPrefill(node);
    for (const node of dirty) if (node.role === 'decode' && this.#nodes.get(node.id) === node) this.#relinkDecode(node);
    // Circuits change with time: read once for the whole diff, as of this moment.
    this.#breakers.poll();
    // Many loads moving at once (a snapshot where every instance changed): each pool is put back in
    // order once at the end, in O(n), rather than one O(log n) heap move per node. Nothing picks
    // from a pool while this runs (it is synchronous), so the pools may be out of order meanwhile.
    const batched = touched.length >= BATCHED_REORDER_MIN;
    if (batched) this.#unordered = [];
    try {
      for (const node of touched) if (this.#nodes.get(node.id) === node) this.#refresh(node, true);
    } finally {
      if (batched) {
        const pools = this.#unordered!;
        this.#unordered = undefined;
        for (const pool of pools) pool.reorderAll();
      }
    }
  }

  /**
   * A pool whose member's load changed: reordered now, or once after the batch under way: the P
   * pool at its end, each P's pool of D's when a pick next reads it (most are not read before the
   * next refresh moves them again).
   */
  #reorder(pool: Pool<SchedulerNode>, node: SchedulerNode): void {
    if (this.#unordered === undefined) pool.reorder(node);
    else if (pool.markUnordered() && pool === this.prefills) this.#unordered.push(pool);
  }

  #upsert(instance: Instance, stamp: number, dirty: SchedulerNode[], touched: SchedulerNode[]): void {
    const existing = this.#nodes.get(instance.id);
    const role = instance.role === 'prefill' || instance.role === 'decode' ? instance.role : undefined;
    if (existing !== undefined && existing.role !== role) {
      this.#remove(instance.id);
    } else if (existing !== undefined) {
      const before = existing.instance;
      if (before !== instance) existing.instance = instance;
      let moved = false;
      if (before.groupId !== instance.groupId) {
        this.#group(before.groupId, existing, false);
        this.#group(instance.groupId, existing, true);
        moved = true;
      }
      if (existing.role === 'decode' && !sameList(before.peers, instance.peers) && !existing.samePeersAs(instance.peers)) {
        existing.setPeers(instance.peers);
        moved = true;
      }
      if (existing.stamp !== stamp) {
        existing.stamp = stamp;
        existing.dirty = false;
        touched.push(existing);
      }
      if (moved && !existing.dirty) {
        existing.dirty = true;
        dirty.push(existing);
      }
      return;
    }
    if (role === undefined) return; // role 85: registered, never scheduled
    const node = new SchedulerNode(instance, role);
    this.#nodes.set(node.id, node);
    this.#group(instance.groupId, node, true);
    this.#counts[role]++;
    node.stamp = stamp;
    node.dirty = true;
    dirty.push(node);
    touched.push(node);
  }

  #remove(id: number): void {
    const node = this.#nodes.get(id);
    if (node === undefined) return;
    for (const other of [...node.links]) {
      if (node.role === 'prefill') this.#unlink(node, other);
      else this.#unlink(other, node);
    }
    this.#nodes.delete(id);
    this.#group(node.instance.groupId, node, false);
    this.#counts[node.role]--;
    this.#capped.delete(node);
    // No longer present: this takes a P out of the pool and out of every counter.
    if (node.role === 'prefill') this.#syncPrefill(node);
    this.#onRemove(node);
  }

  #group(groupId: number, node: SchedulerNode, add: boolean): void {
    let group = this.#groups.get(groupId);
    if (group === undefined) {
      if (!add) return;
      group = { prefills: new Set(), decodes: new Set() };
      this.#groups.set(groupId, group);
    }
    const members = node.role === 'prefill' ? group.prefills : group.decodes;
    if (add) members.add(node);
    else {
      members.delete(node);
      if (group.prefills.size === 0 && group.decodes.size === 0) this.#groups.delete(groupId);
    }
  }

  #relinkPrefill(p: SchedulerNode): void {
    for (const d of [...p.links]) if (!eligible(p, d)) this.#unlink(p, d);
    const group = this.#groups.get(p.instance.groupId);
    if (group !== undefined) for (const d of group.decodes) if (d.listsPeer(p.id)) this.#link(p, d);
  }

  #relinkDecode(d: SchedulerNode): void {
    for (const p of [...d.links]) if (!eligible(p, d)) this.#unlink(p, d);
    for (const id of d.peerIds) {
      const p = this.#nodes.get(id);
      if (p !== undefined && p.role === 'prefill' && eligible(p, d)) this.#link(p, d);
    }
  }

  #link(p: SchedulerNode, d: SchedulerNode): void {
    if (p.links.has(d)) return;
    p.links.add(d);
    d.links.add(p);
    if (d.admissible) p.healthyLinks++;
    if (d.viable) p.decodes.add(d);
    this.#syncPrefill(p);
  }

  #unlink(p: SchedulerNode, d: SchedulerNode): void {
    if (!p.links.delete(d)) return;
    d.links.delete(p);
    if (d.admissible) p.healthyLinks--;
    p.decodes.delete(d);
    this.#syncPrefill(p);
  }

  /** Re-reads a node's capacity and circuit and moves it (and, for a D, its place in each linked P's pool). */
  #refresh(node: SchedulerNode, polled: boolean): void {
    const wasCapped = node.capped;
    const wasLoad = node.load;
    const wasAdmissible = node.admissible;
    const wasViable = node.viable;
    capacityInto(node, node.instance, this.#loads.load(node.id), this.#maxRequests);
    // The set changes only when the node's standing does: a refresh reads every node, and most are never capped.
    if (node.capped !== wasCapped) {
      if (node.capped) this.#capped.add(node);
      else this.#capped.delete(node);
    }
    const loadChanged = node.load !== wasLoad;
    node.admissible = polled ? this.#breakers.admissibleAsPolled(node.id) : this.#breakers.admissible(node.id);
    // The common case under traffic: a reservation moved the load but not what the node can do.
    const sameStanding = wasViable === node.viable && wasAdmissible === node.admissible;
    if (node.role === 'prefill') {
      if (!sameStanding) this.#syncPrefill(node);
      else if (loadChanged) this.#reorder(this.prefills, node);
      return;
    }
    for (const p of node.links) {
      if (sameStanding) {
        if (loadChanged) this.#reorder(p.decodes, node);
        continue;
      }
      if (wasAdmissible !== node.admissible) p.healthyLinks += node.admissible ? 1 : -1;
      if (node.viable) p.decodes.add(node);
      else p.decodes.delete(node);
      this.#syncPrefill(p);
    }
  }

  /** Puts a P in or out of the pick pool and keeps the counters exact, by difference with what it was counted as. */
  #syncPrefill(p: SchedulerNode): void {
    const present = this.#nodes.get(p.id) === p;
    const linked = present && p.links.size > 0;
    const healthyLinked = linked && p.admissible;
    const paired = healthyLinked && p.healthyLinks > 0;
    if (linked !== p.countedLinked) {
      this.#counts.linkedPrefill += linked ? 1 : -1;
      p.countedLinked = linked;
    }
    if (healthyLinked !== p.countedHealthyLinked) {
      this.#counts.healthyLinkedPrefill += healthyLinked ? 1 : -1;
      p.countedHealthyLinked = healthyLinked;
    }
    if (paired !== p.countedPaired) {
      this.#counts.pairedPrefill += paired ? 1 : -1;
      p.countedPaired = paired;
    }
    if (present && p.viable && p.decodes.size > 0) {
      if (this.prefills.has(p)) this.#reorder(this.prefills, p);
      else this.prefills.add(p);
    } else {
      this.prefills.delete(p);
    }
  }
}

function eligible(p: SchedulerNode, d: SchedulerNode): boolean {
  return p.instance.groupId === d.instance.groupId && d.listsPeer(p.id);
}

/** Same ids in the same order: the usual refresh, told without a set lookup per id. */
function sameList(a: readonly number[], b: readonly number[]): boolean {
  if (a === b) return true;
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}
