/**
 * The Coordinator's part that routes on the engines' own KV state: the KV-event intake (fed from
 * the topology's `kv_events_endpoint` entries and from the Conductor API's `/register`), the index
 * it keeps, what precise_prefix reads of it, and the Conductor routes for the management listener.
 * Made here so that createCoordinator adds it with a few lines.
 */
import type { Hono } from 'hono';
import type { ClusterView } from '../cluster/instance.ts';
import type { CoordinatorKvOptions } from '../config/kv-events.ts';
import type { Registry } from '../core/metrics.ts';
import { conductorRoutes } from '../http/conductor.ts';
import { KvEventIntake } from '../kv-events/intake.ts';
import { followTopology, type TopologyFollower } from '../kv-events/topology.ts';
import { KvState } from '../kv/kv-state.ts';
import { Tokenizers, type PromptKind } from '../tokenizer/tokenizers.ts';
import type { PreciseRouting } from '../scheduler/options.ts';

export type { CoordinatorKvOptions } from '../config/kv-events.ts';

export interface CoordinatorKv {
  readonly intake: KvEventIntake;
  readonly follower: TopologyFollower;
  /** The scheduler's `kv` option. */
  readonly precise: PreciseRouting;
  /** Mooncake Conductor's Indexer API, for the management listener. */
  readonly routes: Hono;
  /** The models' tokenizers (`scheduler.tokenizers`), for the proxy; undefined when none is configured. */
  readonly tokenize: ((kind: PromptKind, body: Readonly<Record<string, unknown>>) => number[] | undefined) | undefined;
  close(): void;
}

/**
 * Makes the intake and follows the registry's topology into it.
 * @example const kv = createCoordinatorKv(options.kv ?? {}, registry, metrics);
 */
export function createCoordinatorKv(options: CoordinatorKvOptions, cluster: ClusterView, metrics: Registry): CoordinatorKv {
  const state = new KvState({
    ...(options.seed === undefined ? {} : { seed: options.seed }),
    ...(options.maxBlocks === undefined ? {} : { maxRecords: options.maxBlocks }),
  });
  const intake = new KvEventIntake({
    state,
    metrics,
    ...(options.maxBatchBytes === undefined ? {} : { maxBatchBytes: options.maxBatchBytes }),
    ...(options.replayTimeoutMs === undefined ? {} : { replayTimeoutMs: options.replayTimeoutMs }),
  });
  const follower = followTopology(intake, cluster);
  const tokenizers = options.tokenizers === undefined ? undefined : new Tokenizers(options.tokenizers);
  return {
    intake,
    follower,
    precise: {
      state,
      ...(options.loadWeight === undefined ? {} : { loadWeight: options.loadWeight }),
      ...(options.decodeFirst === undefined ? {} : { decodeFirst: options.decodeFirst }),
    },
    routes: conductorRoutes(intake),
    tokenize: tokenizers === undefined ? undefined : (kind, body) => tokenizers.prompt(kind, body),
    close: () => {
      follower.stop();
      intake.close();
    },
  };
}
