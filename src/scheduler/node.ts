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
  /** Decode: the P ids it lists as peers, for O(1) eligibility checks. */
  peerSet: ReadonlySet<number>;
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
  readonly counted = { linked: false, healthyLinked: false, paired: false };

  constructor(instance: Instance, role: 'prefill' | 'decode') {
    this.id = instance.id;
    this.role = role;
    this.instance = instance;
    this.peerSet = role === 'decode' ? new Set(instance.peers) : EMPTY;
    this.decodes = role === 'prefill' ? new Pool<SchedulerNode>() : EMPTY_POOL;
  }

  /** Admits requests and has a free slot and a free block. */
  get viable(): boolean {
    return this.admissible && this.load < 1;
  }
}

const EMPTY: ReadonlySet<number> = new Set();
// Decode nodes never use their pool; one shared empty instance avoids an allocation per node.
const EMPTY_POOL = new Pool<SchedulerNode>();
