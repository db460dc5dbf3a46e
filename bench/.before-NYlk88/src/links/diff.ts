/**
 * The one desired-vs-current computation of links: given the links wanted and the link table's
 * entries, which are up, which another call is moving, which to link (and which local ends to clear
 * first), and which established links are no longer wanted. Pure: callers apply the result and keep
 * their own retry state around it (the role driver's backoff, the prefill-side prune).
 */
import type { IpPort } from './endpoint.ts';
import { linkKey } from './key.ts';
import type { LinkInfo, LinkSide } from './types.ts';

/** A link that should exist: local endpoint, remote cluster and its address. */
export interface DesiredLink {
  readonly endpoint: string;
  readonly remoteClusterId: bigint;
  readonly remote: IpPort;
}

export interface DiffOptions<T extends DesiredLink> {
  /**
   * Side of the established links this set owns: `client` (links this end made; a wanted link at
   * another address is not wanted) or `server` (links peers made; judged by cluster alone, since a
   * peer's address is its own). `unlink` only ever lists entries of this side: client links linked
   * or failed, server links linked (a failed server end is its client's to clear and relink).
   */
  readonly side: LinkSide;
  /** Desired links the table shows linked but the caller knows are not (the peer unlinked them). */
  readonly stale?: (link: T) => boolean;
}

export interface LinkDiff<T extends DesiredLink> {
  /** Desired and linked. */
  readonly up: T[];
  /** Desired, but a call is linking or unlinking it right now: the next pass settles it. */
  readonly busy: T[];
  /** Desired and not up: to link. */
  readonly link: T[];
  /** Local ends left behind by links in `link` (failed, stale): to clear before linking again. */
  readonly clear: LinkInfo[];
  /** Established entries of `side` that no desired link accounts for. */
  readonly unlink: LinkInfo[];
}

/**
 * Compares `desired` with the table's `current` entries.
 * @example const { link, clear, unlink } = diffLinks(plans, manager.list(), { side: 'client' });
 */
export function diffLinks<T extends DesiredLink>(
  desired: readonly T[],
  current: readonly LinkInfo[],
  options: DiffOptions<T>,
): LinkDiff<T> {
  const wanted = new Map(desired.map((d) => [linkKey(d.endpoint, d.remoteClusterId), d]));
  const entries = new Map(current.map((e) => [linkKey(e.endpoint, e.remoteClusterId), e]));
  const diff: LinkDiff<T> = { up: [], busy: [], link: [], clear: [], unlink: [] };
  for (const d of wanted.values()) {
    const entry = entries.get(linkKey(d.endpoint, d.remoteClusterId));
    if (entry?.state === 'linked' && !(options.stale?.(d) ?? false)) diff.up.push(d);
    else if (entry?.state === 'linking' || entry?.state === 'unlinking') diff.busy.push(d);
    else {
      if (entry !== undefined) diff.clear.push(entry);
      diff.link.push(d);
    }
  }
  for (const entry of current) {
    if (entry.side !== options.side || !(entry.state === 'linked' || (entry.state === 'failed' && entry.side === 'client'))) continue;
    const want = wanted.get(linkKey(entry.endpoint, entry.remoteClusterId));
    if (want === undefined || (options.side === 'client' && !sameAddress(entry.remote, want.remote))) diff.unlink.push(entry);
  }
  return diff;
}

/** An entry whose address is not known yet (a server-side link) is taken to be where it is wanted. */
function sameAddress(have: IpPort | undefined, want: IpPort): boolean {
  return have === undefined || (have.ip === want.ip && have.port === want.port);
}
