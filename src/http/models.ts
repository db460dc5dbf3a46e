/**
 * `GET /v1/models` on the inference listener, as OpenAI clients (and `pdlink bench` without
 * `--model`) call it: the models the registry's prefill and decode instances serve, in OpenAI's
 * list shape, one entry per model name. `created` is when this process first saw the model;
 * `max_model_len` the smallest `max_seq_len` among its instances (what every one of them takes).
 */
import type { ClusterView } from '../cluster/instance.ts';

/** One model as OpenAI lists it, plus vLLM's `max_model_len`. */
export interface ListedModel {
  readonly id: string;
  readonly object: 'model';
  readonly created: number;
  readonly owned_by: 'pdlink';
  readonly max_model_len: number;
}

export interface ModelList {
  readonly object: 'list';
  readonly data: readonly ListedModel[];
}

/**
 * The models of `cluster`, worked out again at the first call after a refresh changed anything.
 * @example app.get('/v1/models', (c) => c.json(models.list()));
 */
export function modelList(cluster: Pick<ClusterView, 'all' | 'onChange'> | undefined, now: () => number = Date.now): { list(): ModelList } {
  const empty: ModelList = { object: 'list', data: [] };
  if (cluster === undefined) return { list: () => empty };
  const firstSeen = new Map<string, number>();
  let cached: ModelList | undefined;
  cluster.onChange(() => {
    cached = undefined;
  });
  const build = (): ModelList => {
    const shortest = new Map<string, number>();
    for (const instance of cluster.all()) {
      if (instance.role !== 'prefill' && instance.role !== 'decode') continue;
      const known = shortest.get(instance.modelName);
      shortest.set(instance.modelName, known === undefined ? instance.maxSeqLen : Math.min(known, instance.maxSeqLen));
    }
    for (const name of firstSeen.keys()) if (!shortest.has(name)) firstSeen.delete(name);
    const data = [...shortest]
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
      .map(([id, maxModelLen]): ListedModel => {
        let created = firstSeen.get(id);
        if (created === undefined) firstSeen.set(id, (created = Math.floor(now() / 1000)));
        return { id, object: 'model', created, owned_by: 'pdlink', max_model_len: maxModelLen };
      });
    return { object: 'list', data };
  };
  return { list: () => (cached ??= build()) };
}
