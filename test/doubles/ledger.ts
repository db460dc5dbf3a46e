/**
 * Fixtures shared by the ledger's tests: a two-instance cluster on a manual clock, and a helper
 * that returns the PdlinkError a call throws.
 */
import { TestCluster } from './cluster.ts';
import { PdlinkError } from '../../src/core/errors.ts';
import { ManualClock } from '../../src/core/lease-clock.ts';
import { KvLedger } from '../../src/ledger/ledger.ts';

export interface LedgerFixture {
  cluster: TestCluster;
  clock: ManualClock;
  ledger: KvLedger;
}

/**
 * P 0 and D 1 with room for 4 slots and 100 blocks each, on a manual clock starting at 1 000 000 ms.
 * @example const { ledger, clock } = ledgerFixture({ defaultLeaseMs: 1_000 });
 */
export function ledgerFixture(options: { recentCapacity?: number; defaultLeaseMs?: number } = {}): LedgerFixture {
  const cluster = new TestCluster();
  cluster.refresh([
    { id: 0, role: 'prefill', availSlots: 4, availBlocks: 100 },
    { id: 1, role: 'decode', availSlots: 4, availBlocks: 100 },
  ]);
  const clock = new ManualClock(1_000_000);
  const ledger = new KvLedger({ cluster, clock, ...options });
  return { cluster, clock, ledger };
}

/**
 * The PdlinkError `fn` throws; fails if it throws nothing or something else.
 * @example expect(thrownBy(() => ledger.complete('x')).code).toBe('not_found');
 */
export function thrownBy(fn: () => unknown): PdlinkError {
  try {
    fn();
  } catch (err) {
    if (err instanceof PdlinkError) return err;
    throw err;
  }
  throw new Error('expected a PdlinkError, nothing was thrown');
}

/** The P→D pair of the fixture. */
export const PAIR = { p: 0, d: 1 } as const;
