/**
 * Mooncake-format traces (one JSON object per line: `timestamp` ms, `input_length`,
 * `output_length`, `hash_ids` of 512-token blocks) turned into a workload, with time and length
 * scaling so an hour of production traffic fits a small machine while keeping the hash structure
 * that makes prefix sharing real.
 */
import type { WorkItem, Workload } from './workload.ts';

/** Tokens per hash block in the Mooncake traces. */
export const TRACE_BLOCK_TOKENS = 512;

export interface TraceScaling {
  /** Arrival times are multiplied by this (0.1 replays ten times faster). */
  readonly timeScale: number;
  /** Prompt lengths (and the tokens of each hash block) are multiplied by this. */
  readonly lengthScale: number;
  /** Completion lengths are multiplied by this. */
  readonly outputScale: number;
  /** At most this many requests, from the start of the trace. */
  readonly maxRequests: number;
}

/**
 * Parses a trace's text into a workload; a bad line throws naming its number and field.
 * @example parseTrace(text, 'trace.jsonl', { timeScale: 0.1, lengthScale: 0.05, outputScale: 0.05, maxRequests: 500 })
 */
export function parseTrace(text: string, source: string, scaling: TraceScaling): Workload {
  const items: WorkItem[] = [];
  let first: number | undefined;
  const lines = text.split('\n');
  for (let n = 0; n < lines.length && items.length < scaling.maxRequests; n++) {
    const line = lines[n]!.trim();
    if (line === '') continue;
    const row = parseRow(line, n + 1);
    first ??= row.timestamp;
    items.push({
      index: items.length,
      arrivalMs: (row.timestamp - first) * scaling.timeScale,
      inputTokens: Math.max(1, Math.round(row.input_length * scaling.lengthScale)),
      outputTokens: Math.max(1, Math.round(row.output_length * scaling.outputScale)),
      hashIds: row.hash_ids,
    });
  }
  if (items.length === 0) throw new Error(`${source}: no requests in the trace`);
  return { kind: 'trace', source, blockTokens: Math.max(1, Math.round(TRACE_BLOCK_TOKENS * scaling.lengthScale)), items };
}

interface TraceRow {
  timestamp: number;
  input_length: number;
  output_length: number;
  hash_ids: number[];
}

function parseRow(line: string, lineNumber: number): TraceRow {
  let row: unknown;
  try {
    row = JSON.parse(line);
  } catch {
    throw new Error(`line ${lineNumber}: not JSON`);
  }
  if (typeof row !== 'object' || row === null || Array.isArray(row)) throw new Error(`line ${lineNumber}: must be a JSON object`);
  const r = row as Record<string, unknown>;
  const count = (field: string, min: number): number => {
    const value = r[field];
    if (typeof value !== 'number' || !Number.isFinite(value) || value < min)
      throw new Error(`line ${lineNumber}: ${field} must be a number ≥ ${min}, got ${JSON.stringify(value)}`);
    return value;
  };
  const timestamp = count('timestamp', 0);
  const input_length = count('input_length', 1);
  const output_length = count('output_length', 1);
  const hashes = r['hash_ids'];
  if (!Array.isArray(hashes) || !hashes.every((h) => Number.isSafeInteger(h)))
    throw new Error(`line ${lineNumber}: hash_ids must be an array of integers`);
  return { timestamp, input_length, output_length, hash_ids: hashes as number[] };
}
