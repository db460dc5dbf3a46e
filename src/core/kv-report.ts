/**
 * What a decode engine tells the proxy it moved for a request. The Coordinator never sees the KV
 * pull itself (D reads P's blocks over the link on its own), so the ledger's `bytes_moved` can
 * only come from D: an engine that knows what it pulled sends it in these response headers, and
 * the proxy passes them to the ledger when the request completes. An engine that does not send
 * them (or sends junk) leaves the ledger's defaults: 0 bytes, the reserved D blocks. The header
 * names and their parsing are a wire contract between an engine and the proxy, so both sides (the
 * proxy and the engine simulator) take them from here.
 */

/** Bytes of KV cache D pulled from P for this request. */
export const KV_BYTES_HEADER = 'x-kv-transfer-bytes';
/** KV blocks D pulled from P for this request. */
export const KV_BLOCKS_HEADER = 'x-kv-transfer-blocks';

/** What the ledger records as moved, when D reported it. */
export interface KvMoved {
  bytes?: number;
  blocks?: number;
}

/**
 * Reads D's report from its response headers; absent or malformed values are left out.
 * @example exchange.end('ok', { kind: 'complete', ...kvMovedOf(res.headers) });
 */
export function kvMovedOf(headers: Pick<Headers, 'get'>): KvMoved {
  const moved: KvMoved = {};
  const bytes = count(headers.get(KV_BYTES_HEADER));
  if (bytes !== undefined) moved.bytes = bytes;
  const blocks = count(headers.get(KV_BLOCKS_HEADER));
  if (blocks !== undefined) moved.blocks = blocks;
  return moved;
}

function count(text: string | null): number | undefined {
  if (text === null || !/^\d{1,16}$/.test(text.trim())) return undefined;
  const value = Number(text.trim());
  return Number.isSafeInteger(value) ? value : undefined;
}
