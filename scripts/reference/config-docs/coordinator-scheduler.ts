/**
 * What each key of the `scheduler` section of `ms_coordinator.json` means: the pair-selection policy
 * of each role, the circuit breakers, conditional disaggregation (decode-first included), and what
 * routing on the engines' own KV events needs (precise_prefix's weight, the KV-event intake's bounds,
 * the tokenizers). Defaults come from the scheduler's, the KV index's and the intake's constants.
 */
import { DEFAULT_LIMITS } from '../../../src/kv-events/intake.ts';
import { ZERO_SEED } from '../../../src/kv/block-keys.ts';
import { DEFAULT_MAX_RECORDS } from '../../../src/kv/kv-index.ts';
import { DEFAULT_FAILURE_THRESHOLD, DEFAULT_SUCCESS_THRESHOLD } from '../../../src/scheduler/breakers.ts';
import { DEFAULT_LOAD_WEIGHT } from '../../../src/scheduler/policies/precise-prefix.ts';
import { DEFAULT_POLICY, DEFAULT_PREFILL_POLICY, policyDefinition, policyNames } from '../../../src/scheduler/index.ts';
import { CIRCUIT_COOLDOWN_MS } from '../../../src/schema/coordinator-config.ts';
import type { KeyDocs } from './shared.ts';

const PRECISE = '`precise_prefix` as the prefill or decode policy';

/** The built-in policies of a role, as the policy table lists them, each with its one-line summary. */
const builtIn = (role: 'prefill' | 'decode'): string =>
  policyNames(role)
    .map((name) => `\`${name}\`: ${policyDefinition(name)!.summary}`)
    .join('; ');

/** Every key of the `scheduler` section of `ms_coordinator.json`. */
export const coordinatorSchedulerKeys: KeyDocs = {
  scheduler: { doc: "pdlink's own: how each request's (P, D) pair is chosen, and when an instance is skipped." },
  'scheduler.policy': { doc: 'The pair-selection policy of each role.' },
  'scheduler.policy.prefill': {
    doc: `A name in the policy table for prefill; built in: ${builtIn('prefill')}. A gateway may register its own (docs/plugin.md). Loads are the last refresh's free slots and blocks minus this Coordinator's reservations.`,
    default: `"${DEFAULT_PREFILL_POLICY}", or \`digs_scheduler_config.algorithm_type\``,
  },
  'scheduler.policy.decode': {
    doc: `The policy among the D's linked to the chosen P (its group, P among their peers); built in: ${builtIn('decode')}. For D, \`precise_prefix\` finds the D already holding a conversation's earlier turns; \`cache_affinity\` is refused (a D's KV comes from P).`,
    default: `"${DEFAULT_POLICY}"`,
  },
  'scheduler.circuit_breaker': {
    doc: `Each instance's circuit opens after ${DEFAULT_FAILURE_THRESHOLD} consecutive failures (transport errors, 5xx, silence; never a 4xx) and closes after ${DEFAULT_SUCCESS_THRESHOLD} successful trials.`,
  },
  'scheduler.circuit_breaker.cooldown_ms': {
    doc: 'How long an open circuit keeps its instance out of the picks before one trial request; a refresh listing the instance, or every candidate of a role being open, ends it early with a trial.',
    default: String(CIRCUIT_COOLDOWN_MS.default),
  },
  'scheduler.conditional_disaggregation': {
    doc: 'When D prefills a request itself (no P leg, no KV transfer); off unless a limit is set. `pdlink_pd_path_total{path}` counts the paths.',
  },
  'scheduler.conditional_disaggregation.max_local_prefill_length': {
    doc: "D prefills when the prompt's uncached tokens (its tokens, counted or estimated, minus the blocks the chosen P is known to hold) are at most this many; with `decode_first`, when the D holds all but at most this many of them.",
    default: 'none (off; 0 with `decode_first`)',
  },
  'scheduler.conditional_disaggregation.max_prefill_queue_size': {
    doc: "D prefills when every P holds more than this many of this Coordinator's requests.",
    default: 'none (off)',
  },
  'scheduler.conditional_disaggregation.decode_first': {
    doc: `true chooses D first: the D that holds all but \`max_local_prefill_length\` tokens of the prompt (best share against load) prefills it itself, and so does the least-loaded D when no P can take the request; otherwise the usual P-then-D pick. Needs ${PRECISE}; ignored without it.`,
    default: 'false',
  },
  'scheduler.precise_prefix': {
    doc: 'The `precise_prefix` policy: score = the share of the prompt an instance holds − `load_weight` × its load.',
  },
  'scheduler.precise_prefix.load_weight': {
    doc: 'How much load counts against the cached share: at 1 a whole prompt cached outweighs a full instance; 0 ignores load among instances with a hit. An instance that publishes no KV events is scored from what pdlink recorded it prefilled.',
    default: String(DEFAULT_LOAD_WEIGHT),
  },
  'scheduler.kv_events': {
    doc: `The engines' KV events (vLLM's ZMQ publisher, per instance and data-parallel rank) that ${PRECISE} reads: the index of which instance holds which block, and the intake's bounds.`,
  },
  'scheduler.kv_events.seed': {
    doc: "Seed of the XXH3-64 rolling keys pdlink computes for a prompt's blocks (Mooncake's `S`), for agreeing with other components that key blocks the same way; an integer, or a decimal string for a full 64-bit value.",
    default: String((BigInt(ZERO_SEED.hi) << 32n) | BigInt(ZERO_SEED.lo)),
  },
  'scheduler.kv_events.max_blocks': {
    doc: 'Most held blocks the index keeps (one record per instance, medium and block: 53 to 61 bytes each with no block shared, and up to a quarter more while its arrays fill; bench/results/kv-index.md measures it); a block stored past it is refused and counted.',
    default: String(DEFAULT_MAX_RECORDS),
  },
  'scheduler.kv_events.max_batch_bytes': {
    doc: 'Largest event batch read from a publisher, in bytes; a larger one is skipped (its events lost, its sequence number kept) and counted.',
    default: String(DEFAULT_LIMITS.maxBatchBytes),
  },
  'scheduler.kv_events.replay_timeout_ms': {
    doc: "How long the replay of the events a sequence gap missed may take (from the publisher's replay endpoint); a gap it cannot fill resets that publisher's entries.",
    default: String(DEFAULT_LIMITS.replayTimeoutMs),
  },
  'scheduler.tokenizers': {
    doc: "Per model name (as clients name it), the directory holding its `tokenizer.json` (and `tokenizer_config.json` with its chat template), for turning that model's text prompts into token ids.",
    default: '{}',
  },
};
