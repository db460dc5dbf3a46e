/**
 * The key of one link, (local endpoint, remote cluster id), as text: the one spelling shared by
 * the link table, the call timeline, the diff and the role driver, so their maps always agree.
 */

/**
 * Key of the link between local `endpoint` and cluster `remoteClusterId`.
 * @example linkKey('0', 7n) // '0\u00007'
 */
export function linkKey(endpoint: string, remoteClusterId: bigint): string {
  return `${endpoint}\u0000${remoteClusterId}`;
}
