/**
 * The Mooncake conversation trace as KV events, for the benches of the KV index and of the proxy's
 * CPU with precise_prefix: each 512-token hash block of the trace becomes 512 / blockTokens engine
 * blocks of deterministic token ids; requests are spread round robin on `instances` instances, and
 * each instance stores what its request brings that it does not hold yet (one BlockStored event per
 * request, chained to the deepest block it holds). Decoded events are built in advance, so what a
 * bench times is the index's own work.
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { EventBatch, KvEvent } from '../src/kv/events.ts';

/** The trace file, from PDLINK_TRACES or ../shared/traces beside the repository. */
export function conversationTrace(): string {
  const file = [process.env['PDLINK_TRACES'], join(import.meta.dir, '..', '..', 'shared', 'traces')]
    .filter((d): d is string => d !== undefined)
    .map((d) => join(d, 'mooncake_conversation_trace.jsonl'))
    .find((f) => existsSync(f));
  if (file === undefined) throw new Error('mooncake_conversation_trace.jsonl not found (set PDLINK_TRACES)');
  return file;
}

export interface TraceEvents {
  /** Every request's prompt as token ids. */
  readonly prompts: Uint32Array[];
  /** The BlockStored batches, in trace order, with the instance that publishes each. */
  readonly stored: { instance: number; batch: EventBatch }[];
  /** The same blocks removed, one batch per stored one. */
  readonly removed: { instance: number; batch: EventBatch }[];
  /** Blocks stored in all. */
  readonly blocks: number;
  readonly requests: number;
}

/**
 * The first `requests` requests of the trace as prompts and events.
 * @example const trace = traceEvents(64, 256, 2000);
 */
export function traceEvents(blockTokens: number, instances: number, requests = Number.MAX_SAFE_INTEGER): TraceEvents {
  const rows = readFileSync(conversationTrace(), 'utf8')
    .split('\n')
    .filter((l) => l.trim() !== '')
    .slice(0, requests)
    .map((l) => JSON.parse(l) as { hash_ids: number[] });
  const perTraceBlock = 512 / blockTokens;
  const promptOf = (hashes: readonly number[]): Uint32Array => {
    const out = new Uint32Array(hashes.length * 512);
    hashes.forEach((h, b) => {
      for (let i = 0; i < 512; i++) out[b * 512 + i] = (Math.imul(h + 1, 2654435761) ^ Math.imul(i + 7, 40503)) >>> 15;
    });
    return out;
  };
  const held = Array.from({ length: instances }, () => new Set<string>());
  const counters = new Uint32Array(instances);
  const engineOf = Array.from({ length: instances }, () => new Map<string, number>());
  const prompts: Uint32Array[] = [];
  const stored: { instance: number; batch: EventBatch }[] = [];
  const removed: { instance: number; batch: EventBatch }[] = [];
  let blocks = 0;
  const batchOf = (event: KvEvent): EventBatch => ({ ts: 0, events: [event], dpRank: undefined, unknownEvents: 0 });
  rows.forEach((row, r) => {
    const instance = r % instances;
    const mine = held[instance]!;
    let prefix = '';
    const prefixes = row.hash_ids.map((h) => (prefix += `${h},`));
    let have = 0;
    while (have < prefixes.length && mine.has(prefixes[have]!)) have++;
    const tokens = promptOf(row.hash_ids);
    prompts.push(tokens);
    if (have === prefixes.length) return;
    const n = (prefixes.length - have) * perTraceBlock;
    const hashes = new Uint32Array(2 * n);
    for (let i = 0; i < n; i++) {
      hashes[2 * i] = instance;
      hashes[2 * i + 1] = ++counters[instance]!;
    }
    const parent = have === 0 ? undefined : engineOf[instance]!.get(prefixes[have - 1]!);
    for (let t = have; t < prefixes.length; t++) {
      mine.add(prefixes[t]!);
      engineOf[instance]!.set(prefixes[t]!, hashes[2 * ((t - have + 1) * perTraceBlock - 1) + 1]!);
    }
    blocks += n;
    stored.push({
      instance,
      batch: batchOf({
        kind: 'stored',
        hashes,
        parent: parent === undefined ? undefined : Uint32Array.of(instance, parent),
        tokens: tokens.subarray(have * 512),
        blockSize: blockTokens,
        medium: 'GPU',
        loraId: undefined,
        loraName: undefined,
      }),
    });
    removed.push({ instance, batch: batchOf({ kind: 'removed', hashes, medium: 'GPU' }) });
  });
  return { prompts, stored, removed, blocks, requests: rows.length };
}
