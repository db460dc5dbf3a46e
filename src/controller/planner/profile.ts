/**
 * What one instance of each role serves while the SLA targets hold, read from a measured profile:
 * the prefill sweep's prompt-token rate at which TTFT (p90) reaches its target, and the decode
 * sweep's output-token rate at which TPOT (p90) reaches its target, each interpolated between the
 * last point that met the target and the first that did not. A profile whose first point already
 * misses a target gives that point's rate scaled down by how far it misses (the instance is slower
 * than the target allows at any load it was measured at), never zero.
 */
import type { PdProfile } from '../../schema/pd-profile.ts';

export interface StageCapacity {
  /** Prompt tokens per second one prefill instance serves within the TTFT target. */
  readonly prefillTokensPerS: number;
  /** Output tokens per second one decode instance serves within the TPOT target. */
  readonly decodeTokensPerS: number;
}

/**
 * The capacity of one P and one D at the targets.
 * @example capacityAt(profile, 2000, 50) // { prefillTokensPerS: 41000, decodeTokensPerS: 3100 }
 */
export function capacityAt(profile: PdProfile, ttftMs: number, tpotMs: number): StageCapacity {
  const prefill = profile.prefill.points.map((p) => ({ rate: p.promptTokensPerS, latency: p.ttftP90Ms }));
  const decode = profile.decode.points.map((p) => ({ rate: p.outputTokensPerS, latency: p.tpotP90Ms }));
  return { prefillTokensPerS: rateAt(prefill, ttftMs), decodeTokensPerS: rateAt(decode, tpotMs) };
}

/**
 * The highest rate at which the latency stays within `target`, by rate order.
 * @example rateAt([{ rate: 10, latency: 5 }, { rate: 20, latency: 15 }], 10) // 15
 */
export function rateAt(points: readonly { rate: number; latency: number | null }[], target: number): number {
  const measured = points.filter((p) => p.latency !== null && p.rate > 0).sort((a, b) => a.rate - b.rate) as {
    rate: number;
    latency: number;
  }[];
  if (measured.length === 0) return 0;
  const first = measured[0]!;
  if (first.latency > target) return first.rate * (target / first.latency);
  let best = first;
  for (const next of measured.slice(1)) {
    if (next.latency <= target) {
      best = next;
      continue;
    }
    // Between the last point within the target and the first beyond it, latency taken as linear in rate.
    const share = next.latency === best.latency ? 0 : (target - best.latency) / (next.latency - best.latency);
    return best.rate + share * (next.rate - best.rate);
  }
  return best.rate;
}
