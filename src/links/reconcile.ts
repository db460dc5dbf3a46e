/**
 * One reconciliation pass: the client-side links that must go (gone from the desired set, moved
 * to another address, or failed) and those that must come, computed from the state table and
 * applied unlinks first. Server-side links belong to the peers that made them and are left alone.
 */
import { LLM_STATUS } from '../core/llm-status.ts';
import type { ClusterTarget, LinkInfo } from './types.ts';

export interface ReconcileItem {
  readonly endpoint: string;
  readonly remoteClusterId: bigint;
  readonly code: number;
}

export interface ReconcileReport {
  /** True when a newer reconcile call replaced this one before it ran. */
  readonly superseded?: boolean;
  readonly linked: readonly ReconcileItem[];
  readonly unlinked: readonly ReconcileItem[];
}

export interface ReconcileInput {
  readonly desired: readonly (ClusterTarget & { readonly endpoint: string })[];
  readonly current: readonly LinkInfo[];
  readonly isEndpoint: (endpoint: string) => boolean;
  readonly link: (endpoint: string, targets: readonly ClusterTarget[]) => Promise<number[]>;
  readonly unlink: (endpoint: string, targets: readonly ClusterTarget[], force: boolean) => Promise<number[]>;
}

type Target = ClusterTarget & { readonly endpoint: string };

/**
 * Computes and applies the difference between `current` and `desired`.
 * @example const report = await reconcileOnce({ desired, current: table.list(), isEndpoint, link, unlink });
 */
export async function reconcileOnce(input: ReconcileInput): Promise<ReconcileReport> {
  const desired = new Map<string, Target>();
  const rejected: ReconcileItem[] = [];
  for (const t of input.desired) {
    if (input.isEndpoint(t.endpoint)) desired.set(`${t.endpoint}\u0000${t.remoteClusterId}`, t);
    else rejected.push({ endpoint: t.endpoint, remoteClusterId: t.remoteClusterId, code: LLM_STATUS.LLM_PARAM_INVALID });
  }
  const toUnlink: { target: Target; force: boolean }[] = [];
  const toLink = new Map(desired);
  for (const entry of input.current) {
    if (entry.side !== 'client' || entry.remote === undefined) continue;
    const key = `${entry.endpoint}\u0000${entry.remoteClusterId}`;
    const want = desired.get(key);
    const sameAddress = want !== undefined && want.remote.ip === entry.remote.ip && want.remote.port === entry.remote.port;
    if (entry.state === 'linking' || entry.state === 'unlinking') {
      // Another call owns it right now; the next pass settles it.
      toLink.delete(key);
      continue;
    }
    if (entry.state === 'linked' && sameAddress) {
      toLink.delete(key);
      continue;
    }
    // A failed link may have left local state behind (unusable link, lost peer): clear only our
    // end, since the peer is probably not answering and a normal unlink would wait out the timeout.
    const target: Target = { endpoint: entry.endpoint, remoteClusterId: entry.remoteClusterId, remote: entry.remote };
    toUnlink.push({ target, force: entry.state === 'failed' });
  }
  const unlinked = await applyGrouped(toUnlink, (endpoint, force, targets) => input.unlink(endpoint, targets, force));
  const linked = await applyGrouped(
    [...toLink.values()].map((target) => ({ target, force: false })),
    (endpoint, _force, targets) => input.link(endpoint, targets),
  );
  return { linked: [...rejected, ...linked], unlinked };
}

async function applyGrouped(
  items: readonly { target: Target; force: boolean }[],
  run: (endpoint: string, force: boolean, targets: readonly ClusterTarget[]) => Promise<number[]>,
): Promise<ReconcileItem[]> {
  const groups = new Map<string, { endpoint: string; force: boolean; targets: Target[] }>();
  for (const { target, force } of items) {
    const key = `${target.endpoint}\u0000${force}`;
    let group = groups.get(key);
    if (group === undefined) groups.set(key, (group = { endpoint: target.endpoint, force, targets: [] }));
    group.targets.push(target);
  }
  const results = await Promise.all(
    [...groups.values()].map(async (g) => {
      const codes = await run(g.endpoint, g.force, g.targets);
      return g.targets.map((t, i) => ({
        endpoint: g.endpoint,
        remoteClusterId: t.remoteClusterId,
        code: codes[i] ?? LLM_STATUS.LLM_FAILED,
      }));
    }),
  );
  return results.flat();
}
