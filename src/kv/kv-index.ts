/**
 * The exact prefix index: which sources (an engine instance's data-parallel rank) hold which KV
 * blocks, on which medium, fed by the engines' own KV events and read by the routing policies and the
 * Conductor API. A block is keyed by pdlink's own rolling key of its tokens (block-keys.ts) within a
 * namespace (model, block size, LoRA, salt); each source's engine hash of a block is mapped to the
 * record, so a removal names what the engine named. Pure data: no sockets, no clocks.
 *
 * Memory is struct-of-arrays (typed arrays that grow by a quarter as they fill, records up to
 * `maxRecords`): a held block costs one record (engine hash, block, source, medium, two holder links:
 * 23 bytes) and its slot in the engine-hash table (8 to 12 bytes: tables grow by half when half
 * full), and its share of the block itself (key, namespace, first holder: 14 bytes, and 8 to 12 of
 * table). With no block shared, 53 to 61 bytes, plus up to a quarter of the arrays not yet used;
 * less the more sources share blocks (bench/results/kv-index.md measures it at 2.2 M held blocks).
 * A lookup walks a prompt's keys once and allocates nothing.
 */
import { SlotTable } from './slot-table.ts';

/** Where a block lies, as engines name it (vLLM `medium`); unknown names get codes of their own. */
export const MEDIUM_GPU = 0;
export const MEDIUM_CPU = 1;
export const MEDIUM_DISK = 2;

/** Most sources (instance × DP rank) one index tracks. */
export const MAX_SOURCES = 65_535;
/** Default bound on held blocks (records) across all sources. */
export const DEFAULT_MAX_RECORDS = 8 * 1024 * 1024;

const NONE = -1;

/** Why a stored block was not indexed. */
export type StoreRefusal = 'full' | 'orphan';

/** Counts of what one applied event did. */
export interface ApplyCounts {
  stored: number;
  removed: number;
  /** Blocks whose parent the source was not known to hold (their keys cannot be computed). */
  orphans: number;
  /** Blocks refused because the index is at `maxRecords`. */
  full: number;
  /** Removals of blocks the source was not known to hold. */
  unknownRemovals: number;
}

/**
 * The longest prefix each source holds, filled by KvIndex.match(): `sources[i]` holds the first
 * `depth[i]` blocks of the prompt (any medium), for i < count. Reused across lookups.
 */
export class MatchResult {
  count = 0;
  readonly sources: Int32Array;
  readonly depth: Int32Array;
  constructor(capacity = 1024) {
    this.sources = new Int32Array(capacity);
    this.depth = new Int32Array(capacity);
  }
}

export interface KvIndexOptions {
  /** Most held blocks across all sources (default 8 Mi); a store beyond it is refused and counted. */
  readonly maxRecords?: number;
}

export class KvIndex {
  readonly maxRecords: number;
  // Blocks.
  #bHi = new Uint32Array(1024);
  #bLo = new Uint32Array(1024);
  #bNs = new Uint16Array(1024);
  /** First holder record; for a free block, the next free block. */
  #bHead = new Int32Array(1024);
  #bUsed = 0;
  #bFree = NONE;
  readonly #blocks: SlotTable;
  // Records: one per (source, medium, block) held.
  #rBlock = new Int32Array(1024);
  #rSource = new Uint16Array(1024);
  #rMedium = new Uint8Array(1024);
  #rNext = new Int32Array(1024);
  #rPrev = new Int32Array(1024);
  #rEngHi = new Uint32Array(1024);
  #rEngLo = new Uint32Array(1024);
  #rUsed = 0;
  #rFree = NONE;
  #held = 0;
  readonly #engine: SlotTable;
  /** Per-source scratch of a lookup: the depth matched so far (index by source). */
  readonly #depth = new Int32Array(MAX_SOURCES + 1);

  constructor(options: KvIndexOptions = {}) {
    this.maxRecords = options.maxRecords ?? DEFAULT_MAX_RECORDS;
    this.#blocks = new SlotTable({
      keyA: (b) => this.#bNs[b]!,
      keyB: (b) => this.#bHi[b]!,
      keyC: (b) => this.#bLo[b]!,
    });
    this.#engine = new SlotTable({
      keyA: (r) => this.#rSource[r]! * 256 + this.#rMedium[r]!,
      keyB: (r) => this.#rEngHi[r]!,
      keyC: (r) => this.#rEngLo[r]!,
    });
  }

  /** Blocks held, counting each (source, medium) holding once. */
  get held(): number {
    return this.#held;
  }

  /** Distinct blocks held by anyone. */
  get blocks(): number {
    return this.#blocks.size;
  }

  /** Bytes of every array and table the index holds now. */
  get bytes(): number {
    const b = this.#bHi.length * (4 + 4 + 2 + 4);
    const r = this.#rBlock.length * (4 + 2 + 1 + 4 + 4 + 4 + 4);
    return b + r + this.#blocks.bytes + this.#engine.bytes + this.#depth.byteLength;
  }

  /**
   * Records that `source` holds, on `medium`, blocks with these keys (namespace `ns`) that it calls by
   * these engine hashes (hi, lo pairs, one per block, same order). Idempotent per engine hash.
   * @example index.store(src, ns, MEDIUM_GPU, keys, engineHashes, 3, counts);
   */
  store(source: number, ns: number, medium: number, keys: Uint32Array, engine: Uint32Array, blocks: number, counts: ApplyCounts): void {
    for (let i = 0; i < blocks; i++) {
      const eh = engine[2 * i]!;
      const el = engine[2 * i + 1]!;
      const known = this.#engine.find(source * 256 + medium, eh, el);
      if (known !== NONE) {
        const b = this.#rBlock[known]!;
        // The engine reused the hash for other content (or the namespace moved): re-point it.
        if (this.#bHi[b] === keys[2 * i] && this.#bLo[b] === keys[2 * i + 1] && this.#bNs[b] === ns) continue;
        this.#dropRecord(known);
      }
      if (this.#held >= this.maxRecords) {
        counts.full += blocks - i;
        return;
      }
      const block = this.#blockFor(ns, keys[2 * i]!, keys[2 * i + 1]!);
      const r = this.#newRecord();
      this.#rBlock[r] = block;
      this.#rSource[r] = source;
      this.#rMedium[r] = medium;
      this.#rEngHi[r] = eh;
      this.#rEngLo[r] = el;
      const head = this.#bHead[block]!;
      this.#rPrev[r] = NONE;
      this.#rNext[r] = head;
      if (head !== NONE) this.#rPrev[head] = r;
      this.#bHead[block] = r;
      this.#engine.insert(r);
      this.#held++;
      counts.stored++;
    }
  }

  /**
   * The key (namespace and hi, lo into `out` at `at`) of the block `source` calls by this engine hash
   * on `medium`, or -1 when it holds no such block; the namespace is returned.
   * @example const ns = index.keyOf(src, MEDIUM_GPU, parentHi, parentLo, parentKey, 0);
   */
  keyOf(source: number, medium: number, engineHi: number, engineLo: number, out: Uint32Array, at: number): number {
    const r = this.#engine.find(source * 256 + medium, engineHi, engineLo);
    if (r === NONE) return NONE;
    const b = this.#rBlock[r]!;
    out[at] = this.#bHi[b]!;
    out[at + 1] = this.#bLo[b]!;
    return this.#bNs[b]!;
  }

  /**
   * Forgets the blocks `source` calls by these engine hashes on `medium`.
   * @example index.remove(src, MEDIUM_GPU, engineHashes, 2, counts);
   */
  remove(source: number, medium: number, engine: Uint32Array, blocks: number, counts: ApplyCounts): void {
    for (let i = 0; i < blocks; i++) {
      const r = this.#engine.find(source * 256 + medium, engine[2 * i]!, engine[2 * i + 1]!);
      if (r === NONE) counts.unknownRemovals++;
      else {
        this.#dropRecord(r);
        counts.removed++;
      }
    }
  }

  /**
   * Forgets everything a source holds (AllBlocksCleared, an engine restart, a lost stream); returns
   * how many holdings went. A scan of the records: rare, and it keeps records free of a second list.
   * @example index.clearSource(src);
   */
  clearSource(source: number): number {
    let dropped = 0;
    for (let r = 0; r < this.#rUsed; r++) {
      if (this.#rBlock[r] !== NONE && this.#rSource[r] === source) {
        this.#dropRecord(r);
        dropped++;
      }
    }
    return dropped;
  }

  /**
   * For each source, how many leading blocks of the prompt (keys of namespace `ns`) it holds on any
   * medium, into `result`; returns the deepest match. Allocates nothing.
   * @example const deepest = index.match(ns, keys, blocks, result);
   */
  match(ns: number, keys: Uint32Array, blocks: number, result: MatchResult): number {
    const depth = this.#depth;
    const sources = result.sources;
    let count = 0;
    let deepest = 0;
    for (let i = 0; i < blocks; i++) {
      const b = this.#blocks.find(ns, keys[2 * i]!, keys[2 * i + 1]!);
      if (b === NONE) break;
      let extended = false;
      for (let r = this.#bHead[b]!; r !== NONE; r = this.#rNext[r]!) {
        const s = this.#rSource[r]!;
        if (i === 0) {
          if (depth[s] === 0 && count < sources.length) {
            sources[count++] = s;
            depth[s] = 1;
            extended = true;
          }
        } else if (depth[s] === i) {
          depth[s] = i + 1;
          extended = true;
        }
      }
      if (!extended) break;
      deepest = i + 1;
    }
    for (let k = 0; k < count; k++) {
      const s = sources[k]!;
      result.depth[k] = depth[s]!;
      depth[s] = 0;
    }
    result.count = count;
    return deepest;
  }

  /**
   * The holders of one block: calls `visit(source, medium)` for each; returns how many there were.
   * @example index.holders(ns, hi, lo, (s, m) => seen.push([s, m]));
   */
  holders(ns: number, hi: number, lo: number, visit: (source: number, medium: number) => void): number {
    const b = this.#blocks.find(ns, hi, lo);
    if (b === NONE) return 0;
    let n = 0;
    for (let r = this.#bHead[b]!; r !== NONE; r = this.#rNext[r]!) {
      visit(this.#rSource[r]!, this.#rMedium[r]!);
      n++;
    }
    return n;
  }

  /**
   * Every holding, for checks and the Conductor's global view: `visit(source, medium, ns, hi, lo)`.
   * @example index.forEach((s, m, ns, hi, lo) => ...);
   */
  forEach(visit: (source: number, medium: number, ns: number, hi: number, lo: number) => void): void {
    for (let r = 0; r < this.#rUsed; r++) {
      const b = this.#rBlock[r]!;
      if (b !== NONE) visit(this.#rSource[r]!, this.#rMedium[r]!, this.#bNs[b]!, this.#bHi[b]!, this.#bLo[b]!);
    }
  }

  #blockFor(ns: number, hi: number, lo: number): number {
    const found = this.#blocks.find(ns, hi, lo);
    if (found !== NONE) return found;
    let b = this.#bFree;
    if (b !== NONE) this.#bFree = this.#bHead[b]!;
    else {
      if (this.#bUsed === this.#bHi.length) this.#growBlocks();
      b = this.#bUsed++;
    }
    this.#bNs[b] = ns;
    this.#bHi[b] = hi;
    this.#bLo[b] = lo;
    this.#bHead[b] = NONE;
    this.#blocks.insert(b);
    return b;
  }

  #newRecord(): number {
    const r = this.#rFree;
    if (r !== NONE) {
      this.#rFree = this.#rNext[r]!;
      return r;
    }
    if (this.#rUsed === this.#rBlock.length) this.#growRecords();
    return this.#rUsed++;
  }

  #dropRecord(r: number): void {
    const b = this.#rBlock[r]!;
    this.#engine.remove(this.#rSource[r]! * 256 + this.#rMedium[r]!, this.#rEngHi[r]!, this.#rEngLo[r]!);
    const prev = this.#rPrev[r]!;
    const next = this.#rNext[r]!;
    if (prev !== NONE) this.#rNext[prev] = next;
    else this.#bHead[b] = next;
    if (next !== NONE) this.#rPrev[next] = prev;
    this.#rBlock[r] = NONE;
    this.#rNext[r] = this.#rFree;
    this.#rFree = r;
    this.#held--;
    if (this.#bHead[b] === NONE) {
      this.#blocks.remove(this.#bNs[b]!, this.#bHi[b]!, this.#bLo[b]!);
      this.#bHead[b] = this.#bFree;
      this.#bFree = b;
    }
  }

  #growBlocks(): void {
    const n = grownLength(this.#bHi.length, this.maxRecords);
    this.#bHi = grown(this.#bHi, new Uint32Array(n));
    this.#bLo = grown(this.#bLo, new Uint32Array(n));
    this.#bNs = grown(this.#bNs, new Uint16Array(n));
    this.#bHead = grown(this.#bHead, new Int32Array(n));
  }

  #growRecords(): void {
    const n = grownLength(this.#rBlock.length, this.maxRecords);
    this.#rBlock = grown(this.#rBlock, new Int32Array(n));
    this.#rSource = grown(this.#rSource, new Uint16Array(n));
    this.#rMedium = grown(this.#rMedium, new Uint8Array(n));
    this.#rNext = grown(this.#rNext, new Int32Array(n));
    this.#rPrev = grown(this.#rPrev, new Int32Array(n));
    this.#rEngHi = grown(this.#rEngHi, new Uint32Array(n));
    this.#rEngLo = grown(this.#rEngLo, new Uint32Array(n));
  }
}

/** Arrays grow by a quarter (at least 1024 entries), never past the bound (a block needs a record). */
function grownLength(length: number, maxRecords: number): number {
  return Math.min(Math.max(length + 1024, Math.ceil(length * 1.25)), Math.max(maxRecords, 1024));
}

function grown<T extends Uint32Array | Int32Array | Uint16Array | Uint8Array>(old: T, into: T): T {
  into.set(old);
  return into;
}

/**
 * Fresh counts for apply calls.
 * @example const counts = noCounts();
 */
export function noCounts(): ApplyCounts {
  return { stored: 0, removed: 0, orphans: 0, full: 0, unknownRemovals: 0 };
}
