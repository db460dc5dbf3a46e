/**
 * The leader's side of the stored state: one record text per instance, built cheaply enough to
 * run after every change at 4096 instances (specs are immutable objects, so each one's JSON is
 * computed once; a role body key is hashed once per key). The snapshot part of a record changes
 * only with the snapshot's shape (addresses, static info, peers), not with every period's free
 * slots and blocks: an idle cluster writes nothing.
 */
import type { RefreshBody, RefreshInstanceBody } from './snapshot.ts';
import { POSTED_HASH_PREFIX, postedHash, type InstanceRecord, type StoredState } from './stored-state.ts';
import type { DesiredInstance } from './types.ts';

export class StateRecords {
  readonly #specs = new WeakMap<DesiredInstance, string>();
  readonly #hashes = new Map<number, { key: string; hash: string }>();
  /** The snapshot entries to store: each as composed when its shape last changed. */
  #entries = new Map<number, { body: RefreshInstanceBody; text: string }>();

  /** Takes the stored entries of a snapshot read at takeover (kept until the shape changes). */
  seed(snapshot: RefreshBody | undefined): void {
    this.#entries = new Map((snapshot?.instances ?? []).map((i) => [i.id, { body: i, text: JSON.stringify(i) }]));
  }

  /**
   * A snapshot was composed: entries whose shape changed (or that came or went) are taken; true
   * when any did.
   * @example if (records.composed(snapshot)) keeper.request();
   */
  composed(snapshot: RefreshBody): boolean {
    let changed = snapshot.instances.length !== this.#entries.size;
    const next = new Map<number, { body: RefreshInstanceBody; text: string }>();
    for (const body of snapshot.instances) {
      const stored = this.#entries.get(body.id);
      if (stored !== undefined && sameShape(stored.body, body)) next.set(body.id, stored);
      else {
        next.set(body.id, { body, text: JSON.stringify(body) });
        changed = true;
      }
    }
    this.#entries = next;
    return changed;
  }

  /**
   * Every instance's record text, by id: the members of `state` and the topology file's instances.
   * @example const records = builder.build(controller.storedState(), fileSpec.instances);
   */
  build(state: StoredState, file: readonly DesiredInstance[]): Map<number, string> {
    const specs = new Map([...(state.desired ?? []), ...(state.draining ?? [])].map((s) => [s.id, s]));
    const inFile = new Map(file.map((s) => [s.id, s]));
    const out = new Map<number, string>();
    for (const a of state.assignments) {
      const spec = specs.get(a.id);
      const fileSpec = inFile.get(a.id);
      const parts = [`"id":${a.id}`];
      if (spec !== undefined) parts.push(`"spec":${this.#spec(spec)}`);
      if (fileSpec !== undefined) {
        const text = this.#spec(fileSpec);
        parts.push(`"file":${spec !== undefined && text === this.#spec(spec) ? '"same"' : text}`);
      }
      parts.push(`"role":"${a.role}"`, `"group":${a.group}`, `"joined":${a.joined}`);
      if (a.postedKey !== undefined) parts.push(`"posted":"${this.#hash(a.id, a.postedKey)}"`);
      if (a.drainRequestedAt !== undefined) parts.push(`"drain_requested_at":${a.drainRequestedAt}`);
      if (a.move !== undefined) parts.push(`"move":${JSON.stringify(a.move)}`);
      const entry = this.#entries.get(a.id);
      if (entry !== undefined) parts.push(`"snapshot":${entry.text}`);
      out.set(a.id, `{${parts.join(',')}}`);
    }
    for (const [id, fileSpec] of inFile) {
      if (!out.has(id)) out.set(id, JSON.stringify({ id, file: fileSpec } satisfies InstanceRecord));
    }
    return out;
  }

  #spec(spec: DesiredInstance): string {
    let text = this.#specs.get(spec);
    if (text === undefined) this.#specs.set(spec, (text = JSON.stringify(spec)));
    return text;
  }

  #hash(id: number, key: string): string {
    // A body restored from the store and not yet matched is its stored hash already.
    if (key.startsWith(POSTED_HASH_PREFIX)) return key.slice(POSTED_HASH_PREFIX.length);
    const cached = this.#hashes.get(id);
    if (cached?.key === key) return cached.hash;
    const hash = postedHash(key);
    this.#hashes.set(id, { key, hash });
    return hash;
  }
}

/** Whether two snapshot entries differ only in free slots and blocks. */
function sameShape(a: RefreshInstanceBody, b: RefreshInstanceBody): boolean {
  if (a.ip !== b.ip || a.port !== b.port || a.metric_port !== b.metric_port || a.model_name !== b.model_name) return false;
  const s = a.static_info;
  const t = b.static_info;
  if (
    s.group_id !== t.group_id ||
    s.max_seq_len !== t.max_seq_len ||
    s.max_output_len !== t.max_output_len ||
    s.total_slots_num !== t.total_slots_num ||
    s.total_block_num !== t.total_block_num ||
    s.block_size !== t.block_size ||
    s.label !== t.label ||
    s.role !== t.role
  ) {
    return false;
  }
  const p = a.dynamic_info.peers;
  const q = b.dynamic_info.peers;
  return p.length === q.length && p.every((x, i) => x === q[i]);
}
