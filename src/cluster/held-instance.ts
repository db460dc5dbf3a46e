/**
 * The instance objects the registry holds. An instance from a plain snapshot (only the schema's
 * keys, in the schema's order: see isPlainSnapshot) does not keep the parsed wire object: its
 * fields say all that object said, so `wire` is rebuilt from them when first read. Holding the
 * parsed objects until the next refresh kept every snapshot's few objects per instance alive past
 * a collection, which in a large all-changed refresh cost the garbage collector more than the
 * rest of the registry's work; the strings and peer lists of an instance whose values did not
 * change are taken from the instance it replaces, so what the parse built dies young.
 *
 * They are read-only but for their free slots and blocks: when a plain snapshot moved only those
 * (the Controller's usual refresh), the instance held takes them in place (takeLoadsOf). A new
 * object per instance per refresh was a tenth of a large refresh's time, and old-generation garbage.
 */
import type { RefreshInstance } from '../schema/refresh.ts';
import { type Instance, type InstanceRole, type LabelCode, ROLE_BY_CODE, type RoleCode } from './instance.ts';

type Obj = Readonly<Record<string, unknown>>;

const NO_PEERS: readonly number[] = [];

/**
 * One registered instance: the domain fields, and its wire object kept or rebuilt on demand.
 * @example const held = HeldInstance.of(wire, registry.get(wire.id), true); held.wire.static_info
 */
export class HeldInstance implements Instance {
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
  /** Free slots and blocks: the fields a refresh moves most, updated in place (see takeLoadsOf). */
  availSlots: number;
  availBlocks: number;
  readonly peers: readonly number[];
  /** The port fields as the wire wrote them, compared with the next snapshot's without converting either. */
  readonly #portText: string;
  readonly #metricPortText: string;
  readonly #roleCode: RoleCode;
  /** Whether the wire object had `dynamic_info.peers` (absent and empty are distinct objects). */
  readonly #hasPeers: boolean;
  #wire: Obj | undefined;

  private constructor(wire: RefreshInstance, before: HeldInstance | undefined, keepWire: boolean) {
    const s = wire.static_info;
    const d = wire.dynamic_info;
    // Values equal to the replaced instance's are taken from it: equal in every way, and the new
    // snapshot's own copies are then garbage as soon as the refresh is applied.
    const same = before !== undefined;
    this.id = wire.id;
    this.ip = same && before.ip === wire.ip ? before.ip : wire.ip;
    this.#portText = same && before.#portText === wire.port ? before.#portText : wire.port;
    this.port = same && before.#portText === wire.port ? before.port : Number(wire.port);
    this.#metricPortText = same && before.#metricPortText === wire.metric_port ? before.#metricPortText : wire.metric_port;
    this.metricPort = same && before.#metricPortText === wire.metric_port ? before.metricPort : Number(wire.metric_port);
    this.modelName = same && before.modelName === wire.model_name ? before.modelName : wire.model_name;
    this.groupId = s.group_id;
    this.maxSeqLen = s.max_seq_len;
    this.maxOutputLen = s.max_output_len;
    this.totalSlots = s.total_slots_num;
    this.totalBlocks = s.total_block_num;
    this.blockSize = s.block_size;
    this.label = s.label;
    this.#roleCode = s.role as RoleCode;
    this.role = ROLE_BY_CODE[s.role as RoleCode];
    this.availSlots = d.avail_slots_num;
    this.availBlocks = d.avail_block_num;
    const peers = d.peers;
    this.#hasPeers = peers !== undefined;
    // Shared with the wire object rather than copied: both are readonly to consumers.
    this.peers = peers === undefined ? NO_PEERS : same && before.#hasPeers && sameIds(before.peers, peers) ? before.peers : peers;
    this.#wire = keepWire ? wire : undefined;
  }

  /**
   * The held shape of a validated wire instance, replacing `before` (same id) if there was one.
   * `keepWire` false is only for instances of a plain snapshot, whose wire object the fields rebuild.
   * @example HeldInstance.of(snapshot.instances[0], undefined, !isPlainSnapshot(snapshot))
   */
  static of(wire: RefreshInstance, before: Instance | undefined, keepWire: boolean): HeldInstance {
    return new HeldInstance(wire, before instanceof HeldInstance ? before : undefined, keepWire);
  }

  /** The instance object exactly as last accepted on the wire, unknown fields included. */
  get wire(): Obj {
    return (this.#wire ??= this.#rebuild());
  }

  /** The wire object of a plain snapshot's instance: its keys in the schema's order, as it came. */
  #rebuild(): Obj {
    const dynamic: Record<string, unknown> = { avail_slots_num: this.availSlots, avail_block_num: this.availBlocks };
    if (this.#hasPeers) dynamic.peers = this.peers;
    return {
      id: this.id,
      ip: this.ip,
      port: this.#portText,
      metric_port: this.#metricPortText,
      model_name: this.modelName,
      static_info: {
        group_id: this.groupId,
        max_seq_len: this.maxSeqLen,
        max_output_len: this.maxOutputLen,
        total_slots_num: this.totalSlots,
        total_block_num: this.totalBlocks,
        block_size: this.blockSize,
        label: this.label,
        role: this.#roleCode,
      },
      dynamic_info: dynamic,
    };
  }

  /**
   * Whether this instance was listed at this address, the port as the wire writes it.
   * @example held.isAt('10.0.0.1', '1025')
   */
  isAt(ip: string, port: string): boolean {
    return this.ip === ip && this.#portText === port;
  }

  /**
   * Whether a wire instance with only the schema's keys says what this instance says, read field
   * by field (the ones a refresh usually changes first), without rebuilding this one's wire object.
   * @example held.sameAs(snapshot.instances[3]) // false when its free slots moved
   */
  sameAs(wire: RefreshInstance): boolean {
    const d = wire.dynamic_info;
    if (this.availSlots !== d.avail_slots_num || this.availBlocks !== d.avail_block_num) return false;
    return this.#sameBesideLoads(wire);
  }

  /**
   * When a wire instance with only the schema's keys differs from this one (itself from such a
   * snapshot) in its free slots or blocks alone, this one takes them, drops its rebuilt wire object
   * and says true; otherwise it changes nothing and says false.
   * @example if (held.takeLoadsOf(wire)) updated.push({ before: held, after: held });
   */
  takeLoadsOf(wire: RefreshInstance): boolean {
    if (!this.#sameBesideLoads(wire)) return false;
    this.takeLoads(wire.dynamic_info.avail_slots_num, wire.dynamic_info.avail_block_num);
    return true;
  }

  /**
   * Takes new free slots and blocks, validated by the caller, and drops the rebuilt wire object.
   * Only for an instance of a plain snapshot, whose wire object the fields rebuild.
   * @example held.takeLoads(60, 900)
   */
  takeLoads(slots: number, blocks: number): void {
    this.availSlots = slots;
    this.availBlocks = blocks;
    this.#wire = undefined;
  }

  #sameBesideLoads(wire: RefreshInstance): boolean {
    const d = wire.dynamic_info;
    const peers = d.peers;
    if (peers === undefined ? this.#hasPeers : !this.#hasPeers || !sameIds(this.peers, peers)) return false;
    if (
      this.id !== wire.id ||
      this.ip !== wire.ip ||
      this.#portText !== wire.port ||
      this.#metricPortText !== wire.metric_port ||
      this.modelName !== wire.model_name
    ) {
      return false;
    }
    const s = wire.static_info;
    return (
      this.groupId === s.group_id &&
      this.maxSeqLen === s.max_seq_len &&
      this.maxOutputLen === s.max_output_len &&
      this.totalSlots === s.total_slots_num &&
      this.totalBlocks === s.total_block_num &&
      this.blockSize === s.block_size &&
      this.label === s.label &&
      this.#roleCode === s.role
    );
  }
}

/** Same ids in the same order (the wire order is part of the object). */
function sameIds(a: readonly unknown[], b: readonly unknown[]): boolean {
  if (a === b) return true;
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}
