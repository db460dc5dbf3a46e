/**
 * Follows the cluster's topology into the intake: an instance whose refresh entry carries
 * `kv_events_endpoint` (rank 0's PUB; `kv_events_replay_endpoint` its ROUTER; `kv_events_dp_size`
 * ranks on consecutive ports, vLLM's rule) is subscribed to under its refresh id, with its model and
 * block size; an instance that leaves, or stops naming an endpoint, is unsubscribed and its entries
 * dropped. The refresh refuses an entry whose publisher fields cannot be used (schema/kv-endpoint.ts
 * holds the rules); one that reaches this follower anyway (a registry fed otherwise) is not
 * subscribed, and says why in `problems` (shown on /dashboard); that instance is scored as one
 * without events.
 */
import type { ClusterView, Instance } from '../cluster/instance.ts';
import { kvEventsIssue } from '../schema/kv-endpoint.ts';
import { rankEndpoint } from '../zmtp/endpoint.ts';
import type { KvEventIntake } from './intake.ts';

export interface TopologyFollower {
  /** Instance id → why its KV-event fields were not used. */
  readonly problems: ReadonlyMap<number, string>;
  stop(): void;
}

/**
 * Subscribes to the publishers the topology names, now and on every change.
 * @example const follower = followTopology(intake, registry); ...; follower.stop();
 */
export function followTopology(intake: KvEventIntake, cluster: ClusterView): TopologyFollower {
  const problems = new Map<number, string>();
  /** Instance id → the source ids subscribed for it. */
  const subscribed = new Map<number, number[]>();
  const drop = (id: number): void => {
    for (const source of subscribed.get(id) ?? []) intake.remove(source);
    subscribed.delete(id);
    problems.delete(id);
  };
  const follow = (instance: Instance): void => {
    const fields = publisherFields(instance);
    if (typeof fields === 'string') {
      drop(instance.id);
      if (fields !== '') problems.set(instance.id, fields);
      return;
    }
    problems.delete(instance.id);
    const sources: number[] = [];
    for (let rank = 0; rank < fields.dpSize; rank++) {
      sources.push(
        intake.add({
          instance: String(instance.id),
          dpRank: rank,
          tenant: 'default',
          model: instance.modelName,
          blockSize: instance.blockSize,
          lora: '',
          salt: '',
          endpoint: rankEndpoint(fields.endpoint, rank),
          ...(fields.replay === undefined ? {} : { replayEndpoint: rankEndpoint(fields.replay, rank) }),
          origin: 'topology',
        }),
      );
    }
    // Ranks beyond a smaller dp_size go.
    for (const source of subscribed.get(instance.id) ?? []) if (!sources.includes(source)) intake.remove(source);
    subscribed.set(instance.id, sources);
  };
  for (const instance of cluster.all()) follow(instance);
  const unsubscribe = cluster.onChange((diff) => {
    for (const instance of diff.removed) drop(instance.id);
    for (const instance of diff.added) follow(instance);
    for (const { after } of diff.updated) follow(after);
  });
  return {
    problems,
    stop: () => {
      unsubscribe();
      for (const id of [...subscribed.keys()]) drop(id);
    },
  };
}

/** The entry's publisher fields, '' when it names none, or why they cannot be used. */
function publisherFields(instance: Instance): { endpoint: string; replay: string | undefined; dpSize: number } | string {
  const wire = instance.wire;
  const endpoint = wire['kv_events_endpoint'];
  if (endpoint === undefined || endpoint === null) return '';
  const issue = kvEventsIssue(wire);
  if (issue !== undefined) return `${issue[0]}: ${issue[1]}`;
  const replay = wire['kv_events_replay_endpoint'];
  const dpSize = wire['kv_events_dp_size'];
  return {
    endpoint: endpoint as string,
    replay: typeof replay === 'string' ? replay : undefined,
    dpSize: typeof dpSize === 'number' ? dpSize : 1,
  };
}
