/**
 * A bounded ring of the most recently ended transfer records, indexed by request id, so
 * `GET /v1/transfers` can show what just happened and a late call on an ended request gets
 * "already done" rather than "not found".
 */
import type { TransferRecord } from './records.ts';

export class RecentRecords {
  readonly #capacity: number;
  readonly #ring: (TransferRecord | undefined)[];
  readonly #byId = new Map<string, TransferRecord>();
  #next = 0;
  #count = 0;

  constructor(capacity: number) {
    this.#capacity = capacity;
    this.#ring = new Array<TransferRecord | undefined>(capacity);
  }

  get size(): number {
    return this.#count;
  }

  /**
   * Keeps an ended record, evicting the oldest when full.
   * @example recent.push(record);
   */
  push(record: TransferRecord): void {
    if (this.#capacity === 0) return;
    const evicted = this.#ring[this.#next];
    // A newer record with the same id may have taken the index entry; only drop the entry if it is ours.
    if (evicted !== undefined && this.#byId.get(evicted.requestId) === evicted) this.#byId.delete(evicted.requestId);
    this.#ring[this.#next] = record;
    this.#byId.set(record.requestId, record);
    this.#next = (this.#next + 1) % this.#capacity;
    if (this.#count < this.#capacity) this.#count++;
  }

  /**
   * The latest ended record of a request, if still kept.
   * @example recent.get('req-1')?.state // 'done'
   */
  get(requestId: string): TransferRecord | undefined {
    return this.#byId.get(requestId);
  }

  /**
   * Kept records, newest first.
   * @example recent.list()[0]?.requestId
   */
  list(): TransferRecord[] {
    const out: TransferRecord[] = [];
    for (let i = 1; i <= this.#count; i++) {
      const record = this.#ring[(this.#next - i + this.#capacity) % this.#capacity];
      if (record !== undefined) out.push(record);
    }
    return out;
  }
}
