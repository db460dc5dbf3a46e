/**
 * Per-instance capacity as the ledger sees it: the slots and blocks an instance last reported free
 * (`avail_slots_num`/`avail_block_num`) and what this process has reserved on top of them. A
 * refresh replaces the reported values; reservations stay until their records end.
 */
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
  /** Active records holding capacity here, so removal and unlink find them without a scan. */
  readonly records = new Set<LiveRecord>();

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
