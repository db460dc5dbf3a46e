/**
 * The Conductor API's answer to "how much of this prefix is cached where": per tenant, per instance,
 * the longest continuous prefix hit in tokens over every medium and DP rank, the hit on each medium,
 * and the hit of each DP rank. A management call, not the routing path: clarity over speed here
 * (routing uses KvIndex.match).
 */
import type { KvState } from './kv-state.ts';

/** `{ tenant: { instance_id: { longest_matched, GPU, CPU, …, DP: { rank: tokens } } } }` */
export type PrefixReport = Record<string, Record<string, InstanceHit>>;

export interface InstanceHit {
  longest_matched: number;
  DP: Record<string, number>;
  [medium: string]: number | Record<string, number>;
}

export interface ReportScope {
  readonly tenant: string;
  /** Only this instance; every instance of the tenant when undefined. */
  readonly instance: string | undefined;
  readonly blockSize: number;
}

/**
 * The hits of the prefix whose block keys are `keys` (two words each, `blocks` of them) in
 * namespace `ns` (−1: nothing is held there), for the instances registered under the scope's tenant.
 * @example prefixReport(state, ns, keys, n, { tenant: 'default', instance: undefined, blockSize: 16 })
 */
export function prefixReport(state: KvState, ns: number, keys: Uint32Array, blocks: number, scope: ReportScope): PrefixReport {
  const instances: Record<string, InstanceHit> = {};
  // Every registered source of the scope appears, hit or not.
  const wanted = new Map<number, { instance: string; dpRank: number }>();
  for (const [source, spec] of state.sources()) {
    if (spec.tenant !== scope.tenant || (scope.instance !== undefined && spec.instance !== scope.instance)) continue;
    wanted.set(source, { instance: spec.instance, dpRank: spec.dpRank });
    instances[spec.instance] ??= { longest_matched: 0, DP: {} };
    instances[spec.instance]!.DP[String(spec.dpRank)] ??= 0;
  }
  if (ns >= 0 && wanted.size > 0) {
    /** Per source: depth over any medium, and per medium. */
    const any = new Map<number, number>();
    const byMedium = new Map<number, Map<number, number>>();
    for (let i = 0; i < blocks; i++) {
      let extended = false;
      state.index.holders(ns, keys[2 * i]!, keys[2 * i + 1]!, (source, medium) => {
        if (!wanted.has(source)) return;
        if ((any.get(source) ?? 0) === i) {
          any.set(source, i + 1);
          extended = true;
        }
        let media = byMedium.get(source);
        if (media === undefined) byMedium.set(source, (media = new Map()));
        if ((media.get(medium) ?? 0) === i) {
          media.set(medium, i + 1);
          extended = true;
        }
      });
      if (!extended) break;
    }
    for (const [source, who] of wanted) {
      const hit = instances[who.instance]!;
      const depth = (any.get(source) ?? 0) * scope.blockSize;
      hit.DP[String(who.dpRank)] = Math.max(hit.DP[String(who.dpRank)] ?? 0, depth);
      hit.longest_matched = Math.max(hit.longest_matched, depth);
      for (const [medium, d] of byMedium.get(source) ?? []) {
        const name = state.mediumName(medium);
        hit[name] = Math.max((hit[name] as number | undefined) ?? 0, d * scope.blockSize);
      }
    }
  }
  for (const hit of Object.values(instances)) for (const name of ['GPU', 'CPU']) hit[name] ??= 0;
  return { [scope.tenant]: instances };
}
