/**
 * The link manager calls of the role driver: any number of links or unlinks, split into calls of
 * at most 16 clusters per device and issued all at once (the manager's batcher coalesces them
 * further into runtime calls), and unlink with force as the fallback.
 */
import type { IpPort } from '../../links/endpoint.ts';
import { MAX_CLUSTERS_PER_CALL, type LinkManager } from '../../links/manager.ts';
import { LLM_STATUS } from '../../core/llm-status.ts';
import type { CallResult, EndpointTarget, LinkInfo } from '../../links/types.ts';

/** What a link or unlink call needs to name a link. */
export type LinkRef = Pick<LinkInfo, 'endpoint' | 'remoteClusterId' | 'remote'>;

/** Unlink outcomes after which the local end is gone (NOTIFY_PROMPT_UNLINK_FAILED: only the peer still holds it). */
export const UNLINK_DONE: ReadonlySet<number> = new Set([
  LLM_STATUS.LLM_SUCCESS,
  LLM_STATUS.LLM_NOT_YET_LINK,
  LLM_STATUS.LLM_NOTIFY_PROMPT_UNLINK_FAILED,
]);
/** Unlink is keyed by cluster id; a server-side link whose peer address is not known yet has none. */
const NO_ADDRESS: IpPort = { ip: '', port: 0 };

/**
 * Links every ref; one code per ref, in input order.
 * @example const codes = await linkAll(manager, plans, 3000);
 */
export function linkAll(manager: LinkManager, refs: readonly LinkRef[], timeoutMs: number): Promise<number[]> {
  return chunked(refs, (targets) => manager.linkClusters(targets, { timeoutMs }));
}

/**
 * Unlinks every ref normally, then forces whatever a normal unlink could not clear (a peer that
 * does not answer, a transfer running, an outcome lost with a worker); returns the refs still
 * held, with their last code.
 * @example for (const { ref, code } of await unlinkAll(manager, stray, 3000)) report(ref, code);
 */
export async function unlinkAll(
  manager: LinkManager,
  refs: readonly LinkRef[],
  timeoutMs: number,
): Promise<{ ref: LinkRef; code: number }[]> {
  const normal = await chunked(refs, (targets) => manager.unlinkClusters(targets, { timeoutMs }));
  const stuck = refs.filter((_, i) => !UNLINK_DONE.has(normal[i] ?? LLM_STATUS.LLM_FAILED));
  const forced = await chunked(stuck, (targets) => manager.unlinkClusters(targets, { timeoutMs, force: true }));
  return stuck.map((ref, i) => ({ ref, code: forced[i] ?? LLM_STATUS.LLM_FAILED })).filter(({ code }) => !UNLINK_DONE.has(code));
}

/** Runs `call` on chunks of ≤ 16 refs of one endpoint, all at once; codes in input order. */
async function chunked(refs: readonly LinkRef[], call: (targets: EndpointTarget[]) => Promise<CallResult>): Promise<number[]> {
  const codes = new Array<number>(refs.length).fill(LLM_STATUS.LLM_FAILED);
  const byEndpoint = new Map<string, number[]>();
  refs.forEach((ref, i) => {
    const list = byEndpoint.get(ref.endpoint);
    if (list === undefined) byEndpoint.set(ref.endpoint, [i]);
    else list.push(i);
  });
  const chunks: number[][] = [];
  for (const list of byEndpoint.values())
    for (let i = 0; i < list.length; i += MAX_CLUSTERS_PER_CALL) chunks.push(list.slice(i, i + MAX_CLUSTERS_PER_CALL));
  await Promise.all(
    chunks.map(async (chunk) => {
      const targets = chunk.map((i): EndpointTarget => {
        const ref = refs[i]!;
        return { endpoint: ref.endpoint, remoteClusterId: ref.remoteClusterId, remote: ref.remote ?? NO_ADDRESS };
      });
      const result = await call(targets);
      chunk.forEach((i, j) => (codes[i] = result.rets[j] ?? result.ret));
    }),
  );
  return codes;
}
