/**
 * SGLang's bootstrap rooms as the simulator keeps them: a prefiller files the KV parameters of a
 * prompt under the room the router chose, a decoder asks for the room (waiting until it is filed)
 * and later says it is done with the blocks, which is when the prefiller answers its own leg.
 */

/** What D needs to pull a room's blocks: the prefill's `kv_transfer_params`. */
export type RoomKv = Readonly<Record<string, unknown>>;

interface Room {
  kv: RoomKv | undefined;
  readonly filed: Promise<RoomKv>;
  readonly file: (kv: RoomKv) => void;
}

/** Rooms older than this with nobody asking are forgotten (a decoder that never came). */
const MAX_ROOMS = 65_536;

export class BootstrapRooms {
  readonly #rooms = new Map<string, Room>();
  readonly #released = new Map<string, () => void>();

  /**
   * P files `kv` under `room`; resolves when the decoder has released `prefillId`.
   * @example await rooms.fill(room, kv, kv.remote_request_id);
   */
  fill(room: string, kv: RoomKv, prefillId: string): Promise<void> {
    this.#room(room).file(kv);
    return new Promise<void>((resolve) => this.#released.set(prefillId, resolve));
  }

  /**
   * The room's KV once P has filed it; undefined when `signal` aborts or `timeoutMs` passes first.
   * @example const kv = await rooms.wait(room, 30_000, c.req.raw.signal);
   */
  async wait(room: string, timeoutMs: number, signal: AbortSignal): Promise<RoomKv | undefined> {
    const entry = this.#room(room);
    if (entry.kv !== undefined) return entry.kv;
    let timer: ReturnType<typeof setTimeout> | undefined;
    const gaveUp = new Promise<undefined>((resolve) => {
      timer = setTimeout(() => resolve(undefined), timeoutMs);
      signal.addEventListener('abort', () => resolve(undefined), { once: true });
    });
    try {
      return await Promise.race([entry.filed, gaveUp]);
    } finally {
      clearTimeout(timer);
    }
  }

  /** The decoder is done with `prefillId`'s blocks (or P dropped them): P's leg may answer. */
  released(prefillId: string): void {
    this.#released.get(prefillId)?.();
    this.#released.delete(prefillId);
  }

  /** Forgets a room (its leg ended). */
  drop(room: string): void {
    this.#rooms.delete(room);
  }

  #room(id: string): Room {
    let room = this.#rooms.get(id);
    if (room === undefined) {
      let file!: (kv: RoomKv) => void;
      const filed = new Promise<RoomKv>((resolve) => (file = resolve));
      const entry: Room = { kv: undefined, filed, file: (kv) => ((entry.kv = kv), file(kv)) };
      room = entry;
      if (this.#rooms.size >= MAX_ROOMS) this.#rooms.delete(this.#rooms.keys().next().value as string);
      this.#rooms.set(id, room);
    }
    return room;
  }
}
