/**
 * When open circuits are all that stands between a request and a pair, answering 503 for the rest
 * of a cool-down helps no one: one open instance is given its trial now (the one whose cool-down
 * ends first), and the pick runs again. Which role gets it follows what is missing: a P when no
 * linked P admits requests, else a D linked to a P the request may use (or, with none, a P).
 */
import type { CircuitBreakers } from './breakers.ts';
import type { CheckedRequest } from './request.ts';
import type { Topology } from './topology.ts';

/**
 * Turns one open instance half-open for a request that found no pair; returns its id, or
 * undefined when there is none to try (or one of the role's trials already runs).
 * @example if (trialEarly(topology, breakers, checked) !== undefined) result = walk();
 */
export function trialEarly(topology: Topology, breakers: CircuitBreakers, checked: CheckedRequest): number | undefined {
  if (topology.counts().healthyLinkedPrefill > 0) {
    const d = breakers.trialEarly(openOf(topology, breakers, checked, 'decode'));
    if (d !== undefined) return d;
  }
  return breakers.trialEarly(openOf(topology, breakers, checked, 'prefill'));
}

/** Ids of the role's instances with a circuit not closed that could complete a pair for the request. */
function openOf(topology: Topology, breakers: CircuitBreakers, checked: CheckedRequest, role: 'prefill' | 'decode'): number[] {
  const ids: number[] = [];
  // Only circuits that are not closed are walked, never the whole cluster.
  for (const { id } of breakers.tripped()) {
    const node = topology.get(id);
    if (node === undefined || node.role !== role) continue;
    if (role === 'prefill') {
      if (!checked.excludeP.has(id) && node.links.size > 0) ids.push(id);
    } else if (!checked.excludeD.has(id) && [...node.links].some((p) => p.admissible && !checked.excludeP.has(p.id))) {
      ids.push(id);
    }
  }
  return ids;
}
