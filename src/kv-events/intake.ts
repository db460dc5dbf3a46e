/**
 * The Coordinator's KV-event intake: one subscription per publisher (an instance's data-parallel
 * rank), feeding one KvState. Publishers come from three places that all land here: a refresh entry
 * carrying `kv_events_endpoint`, the Conductor API's `/register`, and the simulator's own option
 * (through its refresh entry). Adding the same publisher again with the same endpoints changes
 * nothing; with new ones, it resubscribes; removing drops its entries.
 */
import { errors } from '../core/errors.ts';
import { Counter, Gauge, METRIC_PREFIX, type Registry } from '../core/metrics.ts';
import { KvState, type SourceSpec } from '../kv/kv-state.ts';
import { parseEndpoint, type TcpEndpoint } from '../zmtp/endpoint.ts';
import { Subscription, type SubscriptionLimits, type SubscriptionStats } from './subscription.ts';

export interface PublisherSpec extends SourceSpec {
  /** The PUB endpoint of this DP rank (`tcp://host:port`). */
  readonly endpoint: string;
  readonly replayEndpoint?: string;
  /** Who registered it: the topology (a refresh entry) or the Conductor API. */
  readonly origin: 'topology' | 'conductor';
}

export interface IntakeOptions extends Partial<SubscriptionLimits> {
  readonly state?: KvState;
  readonly metrics?: Registry;
}

export const DEFAULT_LIMITS: SubscriptionLimits = { maxBatchBytes: 8 << 20, replayTimeoutMs: 5000, maxReplayBatches: 100_000 };

interface Entry {
  readonly spec: PublisherSpec;
  readonly subscription: Subscription;
}

/** One publisher as /dashboard and the Conductor's global view show it. */
export interface PublisherView extends SubscriptionStats {
  readonly source: number;
  readonly spec: PublisherSpec;
}

export class KvEventIntake {
  readonly state: KvState;
  readonly limits: SubscriptionLimits;
  readonly #entries = new Map<number, Entry>();

  constructor(options: IntakeOptions = {}) {
    this.state = options.state ?? new KvState();
    this.limits = {
      maxBatchBytes: options.maxBatchBytes ?? DEFAULT_LIMITS.maxBatchBytes,
      replayTimeoutMs: options.replayTimeoutMs ?? DEFAULT_LIMITS.replayTimeoutMs,
      maxReplayBatches: options.maxReplayBatches ?? DEFAULT_LIMITS.maxReplayBatches,
    };
    if (options.metrics !== undefined) registerMetrics(options.metrics, this);
  }

  /**
   * Subscribes to a publisher (or keeps the subscription it has); returns its source id.
   * @throws PdlinkError `bad_request` naming `endpoint` or `replay_endpoint` when one is not tcp://HOST:PORT.
   * @example intake.add({ instance: '100', dpRank: 0, tenant: 'default', model: 'm', blockSize: 16, lora: '', salt: '', endpoint: 'tcp://10.0.0.5:5557', origin: 'topology' });
   */
  add(spec: PublisherSpec): number {
    const endpoint = endpointOf(spec.endpoint, 'endpoint');
    const replay = spec.replayEndpoint === undefined ? undefined : endpointOf(spec.replayEndpoint, 'replay_endpoint');
    const known = this.state.sourceId(spec.instance, spec.tenant, spec.dpRank);
    const old = known === undefined ? undefined : this.#entries.get(known);
    if (old !== undefined && sameStream(old.spec, spec)) return known!;
    if (old !== undefined) this.remove(known!);
    const source = this.state.addSource(spec);
    this.#entries.set(source, { spec, subscription: new Subscription(this.state, source, endpoint, replay, this.limits) });
    return source;
  }

  /**
   * Unsubscribes from a publisher and forgets what it held; returns whether it was there.
   * @example intake.remove(source);
   */
  remove(source: number): boolean {
    const entry = this.#entries.get(source);
    if (entry === undefined) return false;
    entry.subscription.close();
    this.#entries.delete(source);
    this.state.removeSource(source);
    return true;
  }

  /** Sources registered from `origin`, with their specs. */
  *publishers(origin?: PublisherSpec['origin']): IterableIterator<[number, PublisherSpec]> {
    for (const [source, entry] of this.#entries) if (origin === undefined || entry.spec.origin === origin) yield [source, entry.spec];
  }

  /** Every publisher with its counters. */
  views(): PublisherView[] {
    return [...this.#entries].map(([source, e]) => ({ source, spec: e.spec, ...e.subscription.stats }));
  }

  /** The subscription of a source (tests wait on its replays). */
  subscription(source: number): Subscription | undefined {
    return this.#entries.get(source)?.subscription;
  }

  /** Unsubscribes from everything. */
  close(): void {
    for (const source of [...this.#entries.keys()]) this.remove(source);
  }
}

function endpointOf(text: string, path: string): TcpEndpoint {
  const parsed = parseEndpoint(text);
  if (typeof parsed === 'string') throw errors.invalidArgument(path, parsed);
  return parsed;
}

function sameStream(a: PublisherSpec, b: PublisherSpec): boolean {
  return (
    a.endpoint === b.endpoint &&
    a.replayEndpoint === b.replayEndpoint &&
    a.model === b.model &&
    a.blockSize === b.blockSize &&
    a.lora === b.lora &&
    a.salt === b.salt &&
    a.origin === b.origin
  );
}

function registerMetrics(registry: Registry, intake: KvEventIntake): void {
  const labels = ['instance', 'dp_rank'];
  const each = (fill: (labels: { instance: string; dp_rank: string }, view: PublisherView) => void): void => {
    for (const view of intake.views()) fill({ instance: view.spec.instance, dp_rank: String(view.spec.dpRank) }, view);
  };
  new Counter({
    name: `${METRIC_PREFIX}kv_events_batches_total`,
    help: 'KV-event batches from each publisher, by outcome (applied live, replayed, duplicate, malformed, oversize, bad_frames)',
    labelNames: [...labels, 'outcome'],
    registers: [registry],
    collect() {
      this.reset();
      each((l, v) => {
        for (const [outcome, n] of Object.entries({
          applied: v.applied,
          replayed: v.replayed,
          duplicate: v.duplicates,
          malformed: v.malformed,
          oversize: v.oversize,
          bad_frames: v.badFrames,
        }))
          this.inc({ ...l, outcome }, n);
      });
    },
  });
  new Counter({
    name: `${METRIC_PREFIX}kv_events_resets_total`,
    help: "Times a publisher's index entries were dropped, by reason (restart: its sequence went back; gap_unfilled; cleared: AllBlocksCleared)",
    labelNames: [...labels, 'reason'],
    registers: [registry],
    collect() {
      this.reset();
      each((l, v) => {
        for (const [reason, n] of Object.entries(v.resets)) this.inc({ ...l, reason }, n);
      });
    },
  });
  new Counter({
    name: `${METRIC_PREFIX}kv_events_gaps_total`,
    help: 'Sequence gaps seen on each publisher (each asks its replay endpoint for what was missed)',
    labelNames: labels,
    registers: [registry],
    collect() {
      this.reset();
      each((l, v) => this.inc(l, v.gaps));
    },
  });
  new Counter({
    name: `${METRIC_PREFIX}kv_events_disconnects_total`,
    help: 'Times the connection to a publisher ended (it is reconnected with backoff)',
    labelNames: labels,
    registers: [registry],
    collect() {
      this.reset();
      each((l, v) => this.inc(l, v.disconnects));
    },
  });
  new Counter({
    name: `${METRIC_PREFIX}kv_events_blocks_total`,
    help: 'Blocks in applied events, by what became of them (stored, removed, orphan: parent unknown, refused_full, unknown_removal)',
    labelNames: [...labels, 'kind'],
    registers: [registry],
    collect() {
      this.reset();
      each((l, v) => {
        const b = v.blocks;
        for (const [kind, n] of Object.entries({
          stored: b.stored,
          removed: b.removed,
          orphan: b.orphans,
          refused_full: b.full,
          unknown_removal: b.unknownRemovals,
        }))
          this.inc({ ...l, kind }, n);
      });
    },
  });
  new Gauge({
    name: `${METRIC_PREFIX}kv_events_connected`,
    help: 'Whether the KV-event stream of each publisher is connected (1) or being reconnected (0)',
    labelNames: labels,
    registers: [registry],
    collect() {
      this.reset();
      each((l, v) => this.set(l, v.connected ? 1 : 0));
    },
  });
  new Gauge({
    name: `${METRIC_PREFIX}kv_index_blocks`,
    help: 'KV index size: held (one per source, medium and block) and distinct blocks',
    labelNames: ['kind'],
    registers: [registry],
    collect() {
      this.set({ kind: 'held' }, intake.state.index.held);
      this.set({ kind: 'distinct' }, intake.state.index.blocks);
    },
  });
  new Gauge({
    name: `${METRIC_PREFIX}kv_index_bytes`,
    help: 'Bytes of the KV index arrays and tables',
    registers: [registry],
    collect() {
      this.set(intake.state.index.bytes);
    },
  });
}
