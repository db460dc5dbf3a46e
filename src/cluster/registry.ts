/**
 * The cluster registry: the one source of truth for the P/D topology. Each accepted refresh
 * snapshot replaces the whole picture and is turned into a diff (added / updated / removed) that
 * subscribers receive synchronously.
 */
import { errors, PdlinkError } from '../core/errors.ts';
import { isMeasuredJson } from '../core/exact-json.ts';
import { IdMap } from '../core/id-map.ts';
import type { RefreshSnapshot } from '../schema/refresh.ts';
import { isPlainSnapshot } from '../schema/refresh-plain.ts';
import { isUintIn } from '../schema/refresh-limits.ts';
import { HeldInstance } from './held-instance.ts';
import { type InstancesView, instancesView, type RoleCounts } from './registry-view.ts';
import { checkDepth, wireEqual } from './wire-compare.ts';
import { type ClusterView, type Instance, type InstanceRole, type RegistryDiff, ROLE_BY_CODE } from './instance.ts';

export type { InstancesView, RoleCounts } from './registry-view.ts';

export type RegistryListener = (diff: RegistryDiff) => void;

export interface ClusterRegistryOptions {
  /** Clock for `lastRefreshAt`, in ms since the epoch (default `Date.now`). */
  now?: () => number;
  /** Receives what a throwing listener threw (default: logged with console.error). */
  onListenerError?: (error: unknown) => void;
}

/**
 * Holds the instances of the last accepted snapshot, indexed by id and by role.
 * @example const registry = new ClusterRegistry(); registry.onChange((d) => log(d.added)); registry.apply(parseRefresh(body));
 */
export class ClusterRegistry implements ClusterView {
  readonly #byId = new IdMap<HeldInstance>();
  #all: readonly HeldInstance[] = [];
  #byRole: Readonly<Record<InstanceRole, readonly HeldInstance[]>> = emptyRoleIndex();
  // Copied on subscribe and unsubscribe, never while notifying: a notification walks the array it
  // started with, so listeners may unsubscribe (themselves or others) while being called, and no
  // refresh pays for a copy of the set.
  #listeners: readonly RegistryListener[] = [];
  #refreshListeners: readonly ((generation: number) => void)[] = [];
  #generation = 0;
  #lastRefreshAt: number | undefined;
  #view: InstancesView | undefined;
  /** Whether the last accepted snapshot held only the schema's keys (see isPlainSnapshot). */
  #lastPlain = false;
  #notifying = false;
  readonly #now: () => number;
  readonly #onListenerError: (error: unknown) => void;

  constructor(options: ClusterRegistryOptions = {}) {
    this.#now = options.now ?? Date.now;
    this.#onListenerError = options.onListenerError ?? ((error) => console.error('pdlink: a cluster registry listener threw', error));
  }

  /**
   * Replaces the topology by a validated snapshot and returns what changed. An instance counts as
   * updated only when its wire object differs from the last accepted one (unknown fields included);
   * a role change is a removal plus an addition. The registry keeps the snapshot's objects: do not
   * mutate them afterwards. An instance object nested deeper than MAX_JSON_DEPTH is refused (a
   * PdlinkError naming its path) and nothing changes: what the registry holds is later compared and
   * serialised by recursive code. HTTP bodies are held to that limit as they are parsed; this
   * check is for snapshots built by code (see isMeasuredJson).
   * @example const diff = registry.apply(parseRefresh(body)); console.log(diff.added.length);
   */
  apply(snapshot: RefreshSnapshot): RegistryDiff {
    // A listener applying a snapshot would hand the remaining listeners a diff that is already stale.
    if (this.#notifying) throw errors.reentrantApply();
    // The same objects in the same order as held (a refresh that moved only loads, or nothing): the
    // lists are kept, not built again. Built from the first instance that differs.
    const held = this.#all;
    let all: HeldInstance[] | undefined = snapshot.instances.length === held.length ? undefined : [];
    const added: HeldInstance[] = [];
    const updated: { before: HeldInstance; after: HeldInstance }[] = [];
    const removed: HeldInstance[] = [];
    // Both this snapshot and the last have only the schema's keys: every object held equals one of
    // the last snapshot's, so comparing the known fields decides equality without walking objects.
    const plain = isPlainSnapshot(snapshot);
    // A body from pdlink's parser was measured as text (a plain one always); only snapshots built by code are walked.
    const measured = plain || isMeasuredJson(snapshot);
    const known = plain && this.#lastPlain;
    let listedBefore = 0;

    // Nothing is changed until every instance has passed (a depth refusal leaves the registry as it was).
    for (let i = 0; i < snapshot.instances.length; i++) {
      const wire = snapshot.instances[i]!;
      const before = this.#byId.get(wire.id);
      const role = ROLE_BY_CODE[wire.static_info.role];
      let unchanged = false;
      // Only its free slots and blocks moved: the instance held took them in place.
      let moved = false;
      if (before !== undefined) {
        listedBefore++;
        if (before.role === role) {
          if (!known) unchanged = wireEqual(before.wire, wire);
          else if (before.availSlots === wire.dynamic_info.avail_slots_num && before.availBlocks === wire.dynamic_info.avail_block_num)
            unchanged = before.sameAs(wire);
          // A change in place before the loop is over: a plain snapshot is never refused below
          // (it was measured as text), so nothing can undo it. Most refreshes move only loads, and
          // a new object per instance each time was a tenth of a large one's time, and old garbage.
          else moved = before.takeLoadsOf(wire);
        }
      }
      // Equal to an accepted object means within the limit; only new and changed objects are measured.
      if (!unchanged && !measured) checkDepth(wire, i);
      // A plain snapshot's instances need not keep their wire objects: their fields rebuild them.
      const instance = unchanged || moved ? before! : HeldInstance.of(wire, before, !plain);
      if (before === undefined) {
        added.push(instance);
      } else if (before.role !== role) {
        removed.push(before);
        added.push(instance);
      } else if (!unchanged) {
        updated.push({ before, after: instance });
      }
      if (all === undefined && held[i] !== instance) all = held.slice(0, i);
      all?.push(instance);
    }
    const listing = all ?? held;
    // Ids are unique in a snapshot: when every held id was listed again, none was removed.
    if (listedBefore < this.#byId.size) {
      const listed = new Set<number>();
      for (const instance of listing) listed.add(instance.id);
      for (const [id, before] of this.#byId) {
        if (listed.has(id)) continue;
        removed.push(before);
        this.#byId.delete(id);
      }
    }
    // Updated in place: most ids stay, and setting an existing key costs far less than building a new map.
    for (const instance of added) this.#byId.set(instance.id, instance);
    for (const { before, after } of updated) if (after !== before) this.#byId.set(after.id, after);

    // Readonly by type, not frozen: freezing large arrays in JavaScriptCore costs more than the apply itself.
    if (all !== undefined) {
      this.#all = all;
      this.#byRole = roleIndexOf(all);
    }
    this.#lastPlain = plain;
    return this.#accepted(added, updated, removed);
  }

  /**
   * Accepts the snapshot the registry holds once more with only free slots and blocks moved, as
   * apply would a snapshot equal to it but for those: `loads` holds the i-th instance's (in
   * snapshot order) free slots at 2i and free blocks at 2i + 1. Only for a registry that holds a
   * plain snapshot (see isPlainSnapshot); a load that is not an integer within its instance's total
   * is refused (a PdlinkError naming it) and nothing changes.
   * @example const loads = template.read(text); if (loads) registry.applyLoads(loads);
   */
  applyLoads(loads: ArrayLike<number>): RegistryDiff {
    if (this.#notifying) throw errors.reentrantApply();
    const held = this.#all;
    if (!this.#lastPlain)
      throw new PdlinkError('internal', "ClusterRegistry.applyLoads needs the last snapshot to be plain (only the schema's keys)");
    if (loads.length !== 2 * held.length) {
      throw errors.invalidArgument('loads', `expected ${2 * held.length} values (2 per instance), got ${loads.length}`);
    }
    for (let i = 0; i < held.length; i++) {
      const instance = held[i]!;
      if (!isUintIn(loads[2 * i], 0, instance.totalSlots)) {
        throw errors.invalidArgument(`loads[${2 * i}]`, `free slots of instance ${instance.id} must be in [0, ${instance.totalSlots}]`);
      }
      if (!isUintIn(loads[2 * i + 1], 0, instance.totalBlocks)) {
        throw errors.invalidArgument(
          `loads[${2 * i + 1}]`,
          `free blocks of instance ${instance.id} must be in [0, ${instance.totalBlocks}]`,
        );
      }
    }
    const updated: { before: HeldInstance; after: HeldInstance }[] = [];
    for (let i = 0; i < held.length; i++) {
      const instance = held[i]!;
      const slots = loads[2 * i]!;
      const blocks = loads[2 * i + 1]!;
      if (instance.availSlots === slots && instance.availBlocks === blocks) continue;
      instance.takeLoads(slots, blocks);
      updated.push({ before: instance, after: instance });
    }
    return this.#accepted(EMPTY, updated, EMPTY);
  }

  /**
   * Accepts the snapshot the registry holds once more (the Controller resent it as it was): nothing
   * changes, the generation moves on and the refresh listeners hear of it, as an apply of an equal
   * snapshot would do, without the snapshot being parsed or compared again.
   * @example if (text === lastText && registry.generation === lastGeneration) registry.repeat();
   */
  repeat(): RegistryDiff {
    if (this.#notifying) throw errors.reentrantApply();
    return this.#accepted(EMPTY, EMPTY, EMPTY);
  }

  /** Counts an accepted refresh and tells the listeners (the diff's only when something changed). */
  #accepted(added: readonly Instance[], updated: RegistryDiff['updated'], removed: readonly Instance[]): RegistryDiff {
    this.#generation += 1;
    this.#lastRefreshAt = this.#now();
    this.#view = undefined;
    const diff: RegistryDiff = { generation: this.#generation, added, updated, removed };
    if (added.length + updated.length + removed.length > 0) this.#notify(diff);
    this.#notifyRefresh();
    return diff;
  }

  get(id: number): HeldInstance | undefined {
    return this.#byId.get(id);
  }

  /** Every instance, in the order of the last snapshot. */
  all(): readonly Instance[] {
    return this.#all;
  }

  /** The instances of one role, from an index rebuilt on apply (no filtering per call). */
  byRole(role: InstanceRole): readonly Instance[] {
    return this.#byRole[role];
  }

  /**
   * Subscribes to diffs; called synchronously after an apply that changed something. A listener
   * that throws is reported and does not affect the apply or the other listeners.
   * @example const stop = registry.onChange((diff) => reconcile(diff)); stop();
   */
  onChange(listener: RegistryListener): () => void {
    // Each subscription is its own entry, so subscribing the same function twice needs two unsubscribes.
    const entry: RegistryListener = (diff) => listener(diff);
    this.#listeners = [...this.#listeners, entry];
    return () => void (this.#listeners = this.#listeners.filter((l) => l !== entry));
  }

  /**
   * Subscribes to every accepted refresh, changed or not, called after the diff listeners.
   * @example const stop = registry.onRefresh((generation) => breakers.relisted((id) => registry.get(id) !== undefined));
   */
  onRefresh(listener: (generation: number) => void): () => void {
    const entry = (generation: number): void => listener(generation);
    this.#refreshListeners = [...this.#refreshListeners, entry];
    return () => void (this.#refreshListeners = this.#refreshListeners.filter((l) => l !== entry));
  }

  /** Accepted refreshes so far (changed or not). */
  get generation(): number {
    return this.#generation;
  }

  /** When the last refresh was accepted (ms since the epoch), or undefined before the first. */
  get lastRefreshAt(): number | undefined {
    return this.#lastRefreshAt;
  }

  /** Registered instances per role. */
  counts(): RoleCounts {
    return { prefill: this.#byRole.prefill.length, decode: this.#byRole.decode.length, undefined: this.#byRole.undefined.length };
  }

  /**
   * The operator view served by `GET /v1/instances` (see InstancesView), cached until the next apply.
   * @example const { generation, groups } = registry.view();
   */
  view(): InstancesView {
    this.#view ??= instancesView(this.#all, this.#generation, this.#lastRefreshAt, this.counts());
    return this.#view;
  }

  #notifyRefresh(): void {
    this.#notifying = true;
    try {
      for (const listener of this.#refreshListeners) {
        try {
          listener(this.#generation);
        } catch (error) {
          this.#onListenerError(error);
        }
      }
    } finally {
      this.#notifying = false;
    }
  }

  #notify(diff: RegistryDiff): void {
    this.#notifying = true;
    try {
      for (const listener of this.#listeners) {
        try {
          listener(diff);
        } catch (error) {
          this.#onListenerError(error);
        }
      }
    } finally {
      this.#notifying = false;
    }
  }
}

/** The instances of each role, in the snapshot's order. */
function roleIndexOf(all: readonly HeldInstance[]): Record<InstanceRole, HeldInstance[]> {
  const byRole: Record<InstanceRole, HeldInstance[]> = { prefill: [], decode: [], undefined: [] };
  for (const instance of all) byRole[instance.role].push(instance);
  return byRole;
}

function emptyRoleIndex(): Readonly<Record<InstanceRole, readonly HeldInstance[]>> {
  return { prefill: [], decode: [], undefined: [] };
}

/** The lists of a diff that changed nothing; readonly to every consumer, so one is shared. */
const EMPTY: readonly never[] = Object.freeze([]);
