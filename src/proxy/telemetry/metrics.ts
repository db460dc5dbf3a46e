/**
 * The proxy's Prometheus metrics, on the Coordinator's own registry. Durations are measured by
 * the proxy on the wire:
 * - prefill: P request sent → P's complete answer (the successful attempt);
 * - KV transfer: P's answer → first byte of D's stream, i.e. D pulling the blocks plus its first
 *   decode step (streaming requests only: a non-streaming D answers once, at the end);
 * - decode: D's first byte → D's last byte (streaming), D request sent → D's answer (non-streaming).
 * Pair selections by policy and circuit states are the scheduler's metrics (src/scheduler/metrics.ts).
 */
import { FastCounter, FastHistogram, type CounterCell, type HistogramCell } from '../../core/fast-metrics.ts';
import { Counter, Gauge, METRIC_PREFIX, type Registry } from '../../core/metrics.ts';

/** How a proxied request ended, the `outcome` label. */
export type ProxyOutcome =
  | 'ok'
  /** The body or a header was rejected by the proxy (400/409/413). */
  | 'invalid'
  /** P or D answered 4xx, passed to the client as is. */
  | 'upstream_rejected'
  /** P or D failed (5xx, transport, empty or malformed answer) before the first byte to the client. */
  | 'upstream_failed'
  /** D failed after the first byte: the stream ended with an error event. */
  | 'stream_failed'
  | 'timeout'
  /** No pair available or not enough KV capacity (503). */
  | 'unavailable'
  /** Over the in-flight limit (429). */
  | 'rejected'
  | 'client_abort'
  /** Admission cut it for a request of a higher class before it answered (503). */
  | 'preempted'
  | 'internal';

/** Why a prefill attempt was retried, the `reason` label. */
export type RetryReason = 'status_5xx' | 'transport' | 'bad_answer';

const DURATION_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600];

export class ProxyMetrics {
  readonly #requests: FastCounter<'api' | 'outcome'>;
  /** Read by the in-flight gauge when the registry is scraped, so a request moves a number, not a metric. */
  #inFlight = 0;
  // Bound once and moved directly (see fast-metrics.ts): these move on every request.
  readonly #prefill: HistogramCell;
  readonly #transfer: HistogramCell;
  readonly #decode: HistogramCell;
  readonly #retries: Counter<'reason'>;
  readonly #staleRetries: Counter<'leg'>;
  readonly #decodeRetries: Counter<'reason'>;
  readonly #instanceFailures: Counter<'instance'>;
  /** Requests the proxy took on, their prompt tokens and the output tokens they asked for (max_tokens). */
  readonly #sized = { requests: 0, promptTokens: 0, outputTokens: 0 };
  readonly #promptTokens: CounterCell;
  readonly #outputTokens: CounterCell;
  /** `requests_total` children by api then outcome, bound once rather than looked up per request. */
  readonly #requestChildren = new Map<string, Map<ProxyOutcome, CounterCell>>();

  /**
   * Registers the proxy's metrics on `registry`.
   * @example const metrics = new ProxyMetrics(coordinator.metrics);
   */
  constructor(registry: Registry) {
    const registers = [registry];
    const p = `${METRIC_PREFIX}pd_`;
    this.#requests = new FastCounter({
      name: `${p}requests_total`,
      help: 'Proxied inference requests by API and outcome.',
      labelNames: ['api', 'outcome'],
      registers,
    });
    const inFlight = (): number => this.#inFlight;
    new Gauge({
      name: `${p}requests_in_flight`,
      help: 'Inference requests in flight through the proxy.',
      registers,
      collect() {
        this.set(inFlight());
      },
    });
    this.#prefill = new FastHistogram({
      name: `${p}prefill_duration_seconds`,
      help: 'P leg: request sent to complete answer, successful attempts.',
      buckets: DURATION_BUCKETS,
      registers,
    }).labels();
    this.#transfer = new FastHistogram({
      name: `${p}kv_transfer_duration_seconds`,
      help: "P's answer to the first byte of D's stream (KV pull plus first decode step), streaming requests.",
      buckets: DURATION_BUCKETS,
      registers,
    }).labels();
    this.#decode = new FastHistogram({
      name: `${p}decode_duration_seconds`,
      help: 'D leg: first byte to end (streaming), request to answer (non-streaming).',
      buckets: DURATION_BUCKETS,
      registers,
    }).labels();
    this.#retries = new Counter({
      name: `${p}retries_total`,
      help: 'Prefill attempts retried on another instance, by reason.',
      labelNames: ['reason'],
      registers,
    });
    this.#staleRetries = new Counter({
      name: `${p}stale_connection_retries_total`,
      help: 'Legs sent on a fresh connection because the pooled keep-alive one was found closed before any byte was written, by leg.',
      labelNames: ['leg'],
      registers,
    });
    this.#decodeRetries = new Counter({
      name: `${p}decode_retries_total`,
      help: 'D legs sent to another D of the same P because the first D never got them (connection refused), by reason.',
      labelNames: ['reason'],
      registers,
    });
    this.#promptTokens = new FastCounter({
      name: `${p}prompt_tokens_total`,
      help: 'Prompt tokens of the requests the proxy took on (exact when tokenised, else its estimate).',
      registers,
    }).labels();
    this.#outputTokens = new FastCounter({
      name: `${p}requested_output_tokens_total`,
      help: 'Output tokens the requests the proxy took on asked for (max_tokens; 0 when a request named none).',
      registers,
    }).labels();
    this.#instanceFailures = new Counter({
      name: `${p}instance_failures_total`,
      help:
        'Failures charged to an instance, by instance: its 5xx, transport errors, unusable answers and timeouts, as its ' +
        'circuit breaker is told; never a client error.',
      labelNames: ['instance'],
      registers,
    });
  }

  requestStarted(): void {
    this.#inFlight++;
  }

  /**
   * A request the proxy took on, by its size: its prompt tokens (exact when tokenised, else the
   * proxy's estimate) and the output tokens it asked for (0 when it named none).
   * @example metrics.requestSized(prompt.tokenCount, 256);
   */
  requestSized(promptTokens: number, outputTokens: number): void {
    this.#sized.requests++;
    this.#sized.promptTokens += promptTokens;
    this.#sized.outputTokens += outputTokens;
    this.#promptTokens.inc(promptTokens);
    this.#outputTokens.inc(outputTokens);
  }

  /** Requests taken on so far, with their prompt and asked-for output tokens (what the controller's SLA planner reads). */
  requestTotals(): { readonly requests: number; readonly promptTokens: number; readonly outputTokens: number } {
    return { ...this.#sized };
  }

  requestEnded(api: string, outcome: ProxyOutcome): void {
    this.#inFlight--;
    this.#requestCounter(api, outcome).inc();
  }

  /** A request turned away before it was admitted (429): counted, never in flight. */
  requestRefused(api: string, outcome: ProxyOutcome): void {
    this.#requestCounter(api, outcome).inc();
  }

  #requestCounter(api: string, outcome: ProxyOutcome): CounterCell {
    let byOutcome = this.#requestChildren.get(api);
    if (byOutcome === undefined) this.#requestChildren.set(api, (byOutcome = new Map()));
    let child = byOutcome.get(outcome);
    if (child === undefined) byOutcome.set(outcome, (child = this.#requests.labels(api, outcome)));
    return child;
  }

  prefill(seconds: number): void {
    this.#prefill.observe(seconds);
  }

  transfer(seconds: number): void {
    this.#transfer.observe(seconds);
  }

  decode(seconds: number): void {
    this.#decode.observe(seconds);
  }

  retried(reason: RetryReason): void {
    this.#retries.inc({ reason });
  }

  /** A D leg never reached its D and goes to another D of the same P. */
  decodeRetried(reason: 'refused'): void {
    this.#decodeRetries.inc({ reason });
  }

  /** A leg's pooled connection was found closed before any byte was written: it went on a fresh one. */
  staleRetried(leg: 'prefill' | 'decode'): void {
    this.#staleRetries.inc({ leg });
  }

  /** A failure was charged to instance `id` (its circuit breaker was told). */
  instanceFailed(id: number): void {
    this.#instanceFailures.inc({ instance: String(id) });
  }
}
