/**
 * The scheduler's record of one prefill or decode instance: its effective capacity, whether its
 * circuit admits requests, and its links to the instances it may pair with. Role-`undefined`
 * instances never get one.
 */
import type { Instance } from '../cluster/instance.ts';
import { Pool, type PoolMember } from './pool.ts';

export class SchedulerNode implements PoolMember {
  readonly id: number;
  readonly role: 'prefill' | 'decode';
  instance: Instance;
  freeSlots = 0;
  freeBlocks = 0;
  /** Starts full: a node joins pools only once its capacity has been read. */
  load = 1;
  admissible = true;
  /** Full only because of the per-instance request cap (see capacityOf). */
  capped = false;
  /** Decode: the P ids it lists as peers, as listed (unique: the snapshot check refuses duplicates); empty for a P. */
  peerIds: readonly number[] = NO_PEERS;
  /** Decode: the same ids as a set, only when the list is too long to search (see listsPeer). */
  #peerLookup: ReadonlySet<number> | undefined;
  /** Eligible partners: a P's decode instances of its group that list it; a D's such prefill instances. */
  readonly links = new Set<SchedulerNode>();
  /** Prefill: linked D's whose circuit admits requests. */
  healthyLinks = 0;
  /** Prefill: linked D's that can take a request now (admissible, free slot and block), ordered by load. */
  readonly decodes: Pool<SchedulerNode>;
  /** The last diff that collected this node (Topology numbers them), and whether it needs relinking in it. */
  stamp = 0;
  dirty = false;
  /** Prefill: which global counters this node is counted in, so each update adjusts them by difference. */
  countedLinked = false;
  countedHealthyLinked = false;
  countedPaired = false;

  constructor(instance: Instance, role: 'prefill' | 'decode') {
    this.id = instance.id;
    this.role = role;
    this.instance = instance;
    if (role === 'decode') this.setPeers(instance.peers);
    this.decodes = role === 'prefill' ? new Pool<SchedulerNode>() : EMPTY_POOL;
  }

  /**
   * Decode: takes a new list of peer ids. A group's handful of prefill instances is searched in the
   * list itself; a set per decode instance was thousands of objects in a large cluster for every
   * full collection to walk.
   * @example node.setPeers(instance.peers); node.listsPeer(3)
   */
  setPeers(ids: readonly number[]): void {
    this.peerIds = ids;
    this.#peerLookup = ids.length > PEER_SCAN_MAX ? new Set(ids) : undefined;
  }

  /** Decode: whether it lists this prefill instance as a peer. */
  listsPeer(id: number): boolean {
    const lookup = this.#peerLookup;
    return lookup === undefined ? this.peerIds.includes(id) : lookup.has(id);
  }

  /** Decode: whether `ids` names the same peers as it lists, in any order. */
  samePeersAs(ids: readonly number[]): boolean {
    if (ids.length !== this.peerIds.length) return false;
    for (let i = 0; i < ids.length; i++) if (!this.listsPeer(ids[i]!)) return false;
    return true;
  }

  /** Admits requests and has a free slot and a free block. */
  get viable(): boolean {
    return this.admissible && this.load < 1;
  }
}

const NO_PEERS: readonly number[] = [];
/** Up to this many peers a decode instance's list is searched; past it a set is kept beside it. */
const PEER_SCAN_MAX = 16;
// Decode nodes never use their pool; one shared empty instance avoids an allocation per node.
const EMPTY_POOL = new Pool<SchedulerNode>();
