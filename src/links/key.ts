/**
 * The key of one link, (local endpoint, remote cluster id), as text: the one spelling shared by
 * the link table, the call timeline, the diff and the role driver, so their maps always agree.
 * Keys are kept once made: turning a 64-bit id into decimal costs about 0.6 µs in JSC, and a call
 * looks its clusters' keys up several times (table, timeline, batch), which made the spelling a
 * third of the manager's time per call.
 */

/** Keys kept before the cache starts over: far above the links of any one agent. */
export const KEY_CACHE_LIMIT = 16_384;

const byEndpoint = new Map<string, Map<bigint, string>>();
let cached = 0;

/**
 * Key of the link between local `endpoint` and cluster `remoteClusterId`.
 * @example linkKey('0', 7n) // '0\u00007'
 */
export function linkKey(endpoint: string, remoteClusterId: bigint): string {
  let keys = byEndpoint.get(endpoint);
  if (keys === undefined) {
    keys = new Map();
    byEndpoint.set(endpoint, keys);
  }
  let key = keys.get(remoteClusterId);
  if (key === undefined) {
    // Ids come and go with the cluster; starting over bounds the cache without bookkeeping.
    if (cached >= KEY_CACHE_LIMIT) {
      byEndpoint.clear();
      cached = 0;
      byEndpoint.set(endpoint, (keys = new Map()));
    }
    key = `${endpoint}\u0000${remoteClusterId}`;
    keys.set(remoteClusterId, key);
    cached++;
  }
  return key;
}

/** Keys held by the cache now (for tests). */
export function cachedLinkKeys(): number {
  return cached;
}
