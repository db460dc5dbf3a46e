/**
 * The parts bench/proxy-ablation.ts leaves out, by the names `bench/proxy-ablation.patch` switches
 * on (see proxy-ablation.ts for what each is).
 */
export const PARTS = [
  'validation',
  'exact-json',
  'metrics',
  'ledger',
  'scheduler',
  'deadlines',
  'client-abort',
  'served-by',
  'sse-events',
] as const;
