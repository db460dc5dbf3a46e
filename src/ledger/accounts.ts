/**
 * Per-instance capacity as the ledger sees it: the slots and blocks an instance last reported free
 * (`avail_slots_num`/`avail_block_num`) and what this process has reserved on top of them. A
 * refresh replaces the reported values; reservations stay until their records end.
 */
import { errors } from '../core/errors.ts';
import type { LiveRecord } from './records.ts';

/** Load of one instance, for the scheduler and `GET /v1/coordinator_info`. */
export interface InstanceLoad {
  readonly reservedSlots: number;
  readonly reservedBlocks: number;
  /** What a new reservation may still take: reported minus reserved, never below zero. */
  readonly availSlots: number;
  readonly availBlocks: number;
  /** As the last refresh reported them. */
  readonly reportedSlots: number;
  readonly reportedBlocks: number;
}

export class InstanceAccount {
  reservedSlots = 0;
  reservedBlocks = 0;
  /**
   * Active records holding capacity here, so removal and unlink find them without a scan. Made by
   * the first one: most instances of a large cluster hold none between refreshes, and an empty set
   * per instance was thousands of objects for every full collection to walk.
   */
  #records: Set<LiveRecord> | undefined;

  constructor(
    public reportedSlots: number,
    public reportedBlocks: number,
  ) {}

  /** Slots a new reservation may take (0 when a refresh reported less than is already reserved). */
  get freeSlots(): number {
    return Math.max(0, this.reportedSlots - this.reservedSlots);
  }

  get freeBlocks(): number {
    return Math.max(0, this.reportedBlocks - this.reservedBlocks);
  }

  /**
   * Throws `insufficient_capacity`, naming this instance and the short resource, unless the demand fits.
   * @example account.require(0, 1, 16);
   */
  require(id: number, slots: number, blocks: number): void {
    if (slots > this.freeSlots) throw errors.insufficientCapacity(id, 'slots', this.freeSlots, slots);
    if (blocks > this.freeBlocks) throw errors.insufficientCapacity(id, 'blocks', this.freeBlocks, blocks);
  }

  /**
   * Holds capacity for a record.
   * @example account.take(record, record.slots, record.pBlocks);
   */
  take(record: LiveRecord, slots: number, blocks: number): void {
    this.reservedSlots += slots;
    this.reservedBlocks += blocks;
    (this.#records ??= new Set()).add(record);
  }

  /**
   * Gives back what `take` held for a record.
   * @example account.give(record, record.slots, record.pBlocks);
   */
  give(record: LiveRecord, slots: number, blocks: number): void {
    this.reservedSlots -= slots;
    this.reservedBlocks -= blocks;
    this.#records?.delete(record);
  }

  /** Whether `record` holds capacity here (an instance removed and added again is a new account). */
  holds(record: LiveRecord): boolean {
    return this.#records?.has(record) === true;
  }

  /**
   * A copy of the records holding capacity here.
   * @example for (const record of account.records()) fail(record);
   */
  records(): LiveRecord[] {
    return this.#records === undefined ? [] : [...this.#records];
  }

  /**
   * The account as plain data.
   * @example account.load().availBlocks
   */
  load(): InstanceLoad {
    return {
      reservedSlots: this.reservedSlots,
      reservedBlocks: this.reservedBlocks,
      availSlots: this.freeSlots,
      availBlocks: this.freeBlocks,
      reportedSlots: this.reportedSlots,
      reportedBlocks: this.reportedBlocks,
    };
  }
}
