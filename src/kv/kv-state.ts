/**
 * Everything pdlink knows of the engines' KV caches, as one pure object: the index, the sources
 * feeding it (an instance's data-parallel rank, with the model, block size, LoRA, tenant and salt it
 * was registered with), the namespaces blocks are keyed in, and the medium names engines use. The
 * event intake hands it decoded batches; the policies and the Conductor API read it.
 */
import { errors } from '../core/errors.ts';
import { BlockHasher, type Seed } from './block-keys.ts';
import type { EventBatch, StoredEvent } from './events.ts';
import { type ApplyCounts, KvIndex, MAX_SOURCES, MEDIUM_CPU, MEDIUM_DISK, MEDIUM_GPU } from './kv-index.ts';

/** One publisher's identity: who holds the blocks it reports, and how they are keyed. */
export interface SourceSpec {
  /** The router-facing instance id (a refresh id as a decimal string, or any Conductor name). */
  readonly instance: string;
  readonly dpRank: number;
  readonly tenant: string;
  readonly model: string;
  readonly blockSize: number;
  /** LoRA adapter of blocks whose events name none ('' = the base model). */
  readonly lora: string;
  readonly salt: string;
}

/** What applying batches did, added up (one object per source in the intake's metrics). */
export interface BatchCounts extends ApplyCounts {
  cleared: number;
  unknownEvents: number;
}

/**
 * Zeroed batch counts.
 * @example const counts = noBatchCounts();
 */
export function noBatchCounts(): BatchCounts {
  return { stored: 0, removed: 0, orphans: 0, full: 0, unknownRemovals: 0, cleared: 0, unknownEvents: 0 };
}

/** Medium names as engines spell them → the index's codes; others get codes from 3 on. */
const KNOWN_MEDIA: Readonly<Record<string, number>> = {
  GPU: MEDIUM_GPU,
  gpu: MEDIUM_GPU,
  NPU: MEDIUM_GPU,
  HBM: MEDIUM_GPU,
  CPU: MEDIUM_CPU,
  cpu: MEDIUM_CPU,
  CPU_PINNED: MEDIUM_CPU,
  DISK: MEDIUM_DISK,
  disk: MEDIUM_DISK,
};
const MEDIUM_NAMES = ['GPU', 'CPU', 'DISK'];
const MAX_MEDIA = 256;
const MAX_NAMESPACES = 65_535;

export interface KvStateOptions {
  readonly seed?: Seed;
  readonly maxRecords?: number;
}

export class KvState {
  /** Changes whenever a source is added, changed or removed (readers cache what they derive from sources). */
  generation = 0;
  readonly index: KvIndex;
  readonly hasher: BlockHasher;
  readonly #sources: (SourceSpec | undefined)[] = [];
  readonly #sourceIds = new Map<string, number>();
  readonly #freeSources: number[] = [];
  readonly #namespaces = new Map<string, number>();
  readonly #namespaceNames: string[] = [];
  readonly #media = new Map<string, number>(Object.entries(KNOWN_MEDIA));
  readonly #mediumNames = [...MEDIUM_NAMES];
  #keys = new Uint32Array(256);
  readonly #parent = new Uint32Array(2);

  constructor(options: KvStateOptions = {}) {
    this.index = new KvIndex(options.maxRecords === undefined ? {} : { maxRecords: options.maxRecords });
    this.hasher = new BlockHasher(options.seed);
  }

  /**
   * The source of this spec, added when new (the same instance, tenant and DP rank is one source).
   * @throws PdlinkError `bad_request` when MAX_SOURCES sources are registered already.
   * @example const src = state.addSource({ instance: '100', dpRank: 0, tenant: 'default', model: 'm', blockSize: 16, lora: '', salt: '' });
   */
  addSource(spec: SourceSpec): number {
    const key = sourceKey(spec.instance, spec.tenant, spec.dpRank);
    const known = this.#sourceIds.get(key);
    this.generation++;
    if (known !== undefined) {
      this.#sources[known] = spec;
      return known;
    }
    const id = this.#freeSources.pop() ?? this.#sources.length;
    if (id >= MAX_SOURCES) throw errors.invalidArgument('instance_id', `at most ${MAX_SOURCES} publishers can be registered`);
    this.#sources[id] = spec;
    this.#sourceIds.set(key, id);
    return id;
  }

  /**
   * Forgets a source and everything it held.
   * @example state.removeSource(src);
   */
  removeSource(id: number): void {
    const spec = this.#sources[id];
    if (spec === undefined) return;
    this.index.clearSource(id);
    this.generation++;
    this.#sources[id] = undefined;
    this.#sourceIds.delete(sourceKey(spec.instance, spec.tenant, spec.dpRank));
    this.#freeSources.push(id);
  }

  /** The spec of a source, or undefined. */
  source(id: number): SourceSpec | undefined {
    return this.#sources[id];
  }

  /** The source id of (instance, tenant, DP rank), or undefined. */
  sourceId(instance: string, tenant: string, dpRank: number): number | undefined {
    return this.#sourceIds.get(sourceKey(instance, tenant, dpRank));
  }

  /** Every source as [id, spec]. */
  *sources(): IterableIterator<[number, SourceSpec]> {
    for (let id = 0; id < this.#sources.length; id++) {
      const spec = this.#sources[id];
      if (spec !== undefined) yield [id, spec];
    }
  }

  /**
   * The namespace of blocks of a model at a block size, LoRA and salt: its id, made when `create`.
   * @example const ns = state.namespace('m', 16, '', '', false); if (ns < 0) nothing is held
   */
  namespace(model: string, blockSize: number, lora: string, salt: string, create = true): number {
    const name = `${model}\u0000${blockSize}\u0000${lora}\u0000${salt}`;
    const known = this.#namespaces.get(name);
    if (known !== undefined || !create) return known ?? -1;
    if (this.#namespaces.size >= MAX_NAMESPACES) return -1;
    const id = this.#namespaces.size;
    this.#namespaces.set(name, id);
    this.#namespaceNames.push(name);
    return id;
  }

  /** The name of a medium code (GPU, CPU, DISK, or the engine's own word). */
  mediumName(code: number): string {
    return this.#mediumNames[code] ?? `medium${code}`;
  }

  /** Medium codes in use, GPU first. */
  get mediumCount(): number {
    return this.#mediumNames.length;
  }

  /**
   * Applies a decoded batch from a source; an `AllBlocksCleared` drops what the source held.
   * @example state.apply(src, decodeBatch(payload), counts);
   */
  apply(source: number, batch: EventBatch, counts: BatchCounts): void {
    const spec = this.#sources[source];
    if (spec === undefined) return;
    counts.unknownEvents += batch.unknownEvents;
    for (const event of batch.events) {
      if (event.kind === 'cleared') {
        this.index.clearSource(source);
        counts.cleared++;
      } else if (event.kind === 'removed') {
        this.index.remove(source, this.#medium(event.medium), event.hashes, event.hashes.length / 2, counts);
      } else this.#store(source, spec, event, counts);
    }
  }

  #store(source: number, spec: SourceSpec, event: StoredEvent, counts: BatchCounts): void {
    const blocks = event.hashes.length / 2;
    const medium = this.#medium(event.medium);
    const ns = this.namespace(spec.model, event.blockSize, event.loraName ?? spec.lora, spec.salt);
    if (ns < 0) {
      counts.full += blocks;
      return;
    }
    let parent: { hi: number; lo: number } | undefined;
    if (event.parent !== undefined) {
      const found = this.#findParent(source, medium, event.parent);
      if (found !== ns) {
        // The source was not known to hold the parent (joined mid-stream, or it was evicted).
        counts.orphans += blocks;
        return;
      }
      parent = { hi: this.#parent[0]!, lo: this.#parent[1]! };
    }
    if (this.#keys.length < 2 * blocks) this.#keys = new Uint32Array(2 * blocks);
    this.hasher.chain(event.tokens, 0, blocks, event.blockSize, this.#keys, 0, parent);
    this.index.store(source, ns, medium, this.#keys, event.hashes, blocks, counts);
  }

  /** The parent's namespace (its key into #parent), searching the event's medium first. */
  #findParent(source: number, medium: number, parent: Uint32Array): number {
    const ns = this.index.keyOf(source, medium, parent[0]!, parent[1]!, this.#parent, 0);
    if (ns >= 0) return ns;
    for (let m = 0; m < this.#mediumNames.length; m++) {
      if (m === medium) continue;
      const other = this.index.keyOf(source, m, parent[0]!, parent[1]!, this.#parent, 0);
      if (other >= 0) return other;
    }
    return -1;
  }

  #medium(name: string | undefined): number {
    if (name === undefined) return MEDIUM_GPU;
    const known = this.#media.get(name);
    if (known !== undefined) return known;
    if (this.#mediumNames.length >= MAX_MEDIA) return MEDIUM_GPU;
    const code = this.#mediumNames.length;
    this.#mediumNames.push(name);
    this.#media.set(name, code);
    return code;
  }
}

function sourceKey(instance: string, tenant: string, dpRank: number): string {
  return `${instance}\u0000${tenant}\u0000${dpRank}`;
}
