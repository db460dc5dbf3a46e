/**
 * How the runtime's link events change the link table: a peer that linked to us or unlinked, a
 * lost peer, a link that became unusable. A client-side link keeps a failed entry when the runtime
 * dropped it, for the owner of the desired set to see and relink; a server-side one is forgotten.
 * An event older than the last call that settled its link is ignored: that call already saw it.
 */
import { LLM_STATUS } from '../core/llm-status.ts';
import type { CallTimeline } from './call-timeline.ts';
import type { LinkTable } from './table.ts';
import type { RuntimeLinkEvent } from './types.ts';

/**
 * Applies `event` from `endpoint`'s runtime to `table`; false when it predates the last settled call.
 * @example applyRuntimeEvent(table, timeline, '0', { kind: 'peer-lost', side: 'server', remoteClusterId: 7n, code: 0 });
 */
export function applyRuntimeEvent(table: LinkTable, timeline: CallTimeline, endpoint: string, event: RuntimeLinkEvent): boolean {
  const id = event.remoteClusterId;
  if (event.timeMs !== undefined && timeline.predates(endpoint, id, event.timeMs)) return false;
  const entry = table.get(endpoint, id);
  switch (event.kind) {
    case 'peer-linked':
      if (entry?.side !== 'client') table.set(endpoint, id, { state: 'linked', side: 'server', reason: 'peer-linked' });
      return true;
    case 'peer-unlinked':
      if (entry?.side === 'client' && entry.state === 'linking')
        timeline.dropWhileLinking(endpoint, id, event.timeMs, { code: LLM_STATUS.LLM_NOT_YET_LINK, reason: 'peer-unlinked' });
      if (entry?.side === 'server') table.set(endpoint, id, { state: 'unlinked', reason: 'peer-unlinked' });
      // The server cleaned us up (P-side cleanup): the runtime dropped the link, so a client keeps a
      // failed entry, like a lost peer, for the owner of the desired set to see and relink.
      else if (entry?.side === 'client' && entry.state === 'linked') {
        table.set(endpoint, id, { state: 'failed', reason: 'peer-unlinked', code: LLM_STATUS.LLM_NOT_YET_LINK });
      }
      return true;
    case 'peer-lost':
      if (entry === undefined) return true;
      if (entry.side === 'client' && entry.state === 'linking')
        timeline.dropWhileLinking(endpoint, id, event.timeMs, {
          code: event.code || LLM_STATUS.LLM_LINK_FAILED,
          reason: 'peer-lost',
        });
      // The runtime has already dropped the link; a server forgets the peer, a client keeps a
      // failed entry so the owner of the desired set sees it and relinks.
      if (entry.side === 'server')
        table.set(endpoint, id, { state: 'unlinked', reason: 'peer-lost', code: event.code || LLM_STATUS.LLM_LINK_FAILED });
      else if (entry.state === 'linked')
        table.set(endpoint, id, { state: 'failed', reason: 'peer-lost', code: event.code || LLM_STATUS.LLM_LINK_FAILED });
      return true;
    case 'link-unusable':
      if (entry?.side === 'client' && entry.state === 'linking')
        timeline.dropWhileLinking(endpoint, id, event.timeMs, {
          code: event.code || LLM_STATUS.LLM_WAIT_PROC_TIMEOUT,
          reason: 'link-unusable',
        });
      if (entry?.state === 'linked')
        table.set(endpoint, id, { state: 'failed', reason: 'link-unusable', code: event.code || LLM_STATUS.LLM_WAIT_PROC_TIMEOUT });
      return true;
  }
}
