/**
 * SGLang's bootstrap fields: its engines take one request body on both P and D, and D finds P's KV
 * through P's bootstrap server, named by `bootstrap_host` and `bootstrap_port`, under a
 * `bootstrap_room` that both sides agree on. A batched prompt (an array of texts or of token-id
 * lists) gets one room per item, and then arrays of the three fields, as SGLang's own router sends.
 */
import type { Instance } from '../../cluster/instance.ts';
import { UnsafeInteger } from '../../core/exact-json.ts';

/** Rooms are stored as int64 by the engines: a room is a random 63-bit non-negative integer. */
const ROOM_MASK = (1n << 63n) - 1n;

/**
 * A fresh room: 63 random bits. Returned as a bigint; the body carries it as a JSON integer.
 * @example freshRoom() < 2n ** 63n // true
 */
export function freshRoom(): bigint {
  const words = crypto.getRandomValues(new BigUint64Array(1));
  return words[0]! & ROOM_MASK;
}

/**
 * How many items a prompt batches: the length of `text`/`input_ids`/`prompt` when it is a batch,
 * else undefined (one request, one room). A list of numbers is one tokenised prompt, not a batch.
 * @example batchSize({ prompt: ['a', 'b'] }) // 2
 */
export function batchSize(body: Readonly<Record<string, unknown>>): number | undefined {
  for (const key of ['text', 'input_ids', 'prompt'] as const) {
    const value = body[key];
    if (!Array.isArray(value) || value.length === 0) continue;
    if (value.every((item) => typeof item === 'number')) return undefined;
    return value.length;
  }
  return undefined;
}

/**
 * P's bootstrap port: its refresh entry's own `bootstrap_port` when it names one, else `fallback`
 * (`pdlink.proxy.bootstrap_port`).
 * @example bootstrapPortOf(p, 8998)
 */
export function bootstrapPortOf(p: Pick<Instance, 'wire'>, fallback: number): number {
  const own = p.wire['bootstrap_port'];
  return typeof own === 'number' && Number.isInteger(own) && own >= 1 && own <= 65535 ? own : fallback;
}

/** The three fields injected into one request, with the rooms they carry. */
export interface Bootstrap {
  readonly host: string;
  readonly port: number;
  /** One room, or one per item of a batched prompt. */
  readonly rooms: readonly bigint[];
  readonly batched: boolean;
}

/**
 * Fresh bootstrap fields for `body` sent to P at `host`.
 * @example const boot = newBootstrap(body, p.ip, bootstrapPortOf(p, 8998));
 */
export function newBootstrap(body: Readonly<Record<string, unknown>>, host: string, port: number): Bootstrap {
  const size = batchSize(body);
  const rooms = Array.from({ length: size ?? 1 }, freshRoom);
  return { host, port, rooms, batched: size !== undefined };
}

/**
 * The request body both legs get: the client's, with the bootstrap fields set (the client's own,
 * if any, are replaced: they would point at a P this proxy did not choose).
 * @example withBootstrap(body, boot)
 */
export function withBootstrap(body: Readonly<Record<string, unknown>>, boot: Bootstrap): Record<string, unknown> {
  const n = boot.rooms.length;
  return {
    ...body,
    bootstrap_host: boot.batched ? Array<string>(n).fill(boot.host) : boot.host,
    bootstrap_port: boot.batched ? Array<number>(n).fill(boot.port) : boot.port,
    bootstrap_room: boot.batched ? boot.rooms.map(exactInteger) : exactInteger(boot.rooms[0]!),
  };
}

/** A 63-bit room as a JSON integer with all its digits (a number would round beyond 2^53). */
function exactInteger(room: bigint): UnsafeInteger {
  return new UnsafeInteger(room.toString());
}
