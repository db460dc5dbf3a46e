/**
 * Circuit breakers, one per instance, fed by the outcomes the proxy sees (passive health checking).
 * closed → open after `failureThreshold` consecutive failures; open → half-open once `cooldownMs`
 * has passed; half-open admits one trial request at a time, closes after `successThreshold`
 * successful trials and reopens on a failed one. Only transport errors and 5xx count as failures:
 * a 4xx is the client's fault, so callers never report it.
 *
 * Two signals end a cool-down early, each with one trial, never a clean slate, so an instance that
 * keeps failing costs one request per signal: the Controller listing the instance again in a
 * refresh (it saw the instance alive after the failures, e.g. restarted), and the scheduler finding
 * every candidate of a role open (one trial beats answering 503 for the rest of the cool-down).
 *
 * Time is read from an injectable clock and applied lazily (on every query and on `poll()`), so
 * there is no timer to clean up and tests advance time without sleeping.
 */
import { errors } from '../core/errors.ts';

export type CircuitState = 'closed' | 'open' | 'half_open';

/** Gauge value of each state (`pdlink_circuit_state`). */
export const CIRCUIT_STATE_CODE = { closed: 0, half_open: 1, open: 2 } as const satisfies Record<CircuitState, number>;

export const DEFAULT_FAILURE_THRESHOLD = 5;
export const DEFAULT_SUCCESS_THRESHOLD = 2;
export const DEFAULT_COOLDOWN_MS = 30_000;

export interface BreakerOptions {
  /** Consecutive failures that open a closed circuit (default 5). */
  failureThreshold?: number;
  /** Successful trials that close a half-open circuit (default 2). */
  successThreshold?: number;
  /** How long an open circuit refuses requests before a trial (default 30 s). */
  cooldownMs?: number;
  /** A trial whose outcome is never reported stops blocking the next one after this long (default: cooldownMs). */
  trialTimeoutMs?: number;
  /** Milliseconds, monotonic (default `performance.now`). */
  clock?: () => number;
}

/** One change of an instance's circuit, or of whether it admits a request now. */
export interface CircuitEvent {
  readonly id: number;
  readonly state: CircuitState;
  readonly previous: CircuitState;
  /** Whether the scheduler may send a new request there now (false while a half-open trial runs). */
  readonly admissible: boolean;
}

interface Circuit {
  state: CircuitState;
  /** Consecutive failures while closed; successful trials while half-open. */
  count: number;
  /** Open: when the cool-down ends. Half-open: when a running trial stops blocking, or Infinity when none runs. */
  until: number;
}

/** The breakers of every instance; instances never reported on are closed and hold no memory. */
export class CircuitBreakers {
  readonly #circuits = new Map<number, Circuit>();
  readonly #listeners = new Set<(event: CircuitEvent) => void>();
  readonly #failureThreshold: number;
  readonly #successThreshold: number;
  readonly #cooldownMs: number;
  readonly #trialTimeoutMs: number;
  readonly #clock: () => number;
  /** Earliest time any circuit changes by itself; poll() is O(1) before it. */
  #nextDeadline = Infinity;

  constructor(options: BreakerOptions = {}) {
    this.#failureThreshold = positiveInteger(options.failureThreshold, DEFAULT_FAILURE_THRESHOLD, 'health.failureThreshold');
    this.#successThreshold = positiveInteger(options.successThreshold, DEFAULT_SUCCESS_THRESHOLD, 'health.successThreshold');
    this.#cooldownMs = positiveNumber(options.cooldownMs, DEFAULT_COOLDOWN_MS, 'health.cooldownMs');
    this.#trialTimeoutMs = positiveNumber(options.trialTimeoutMs, this.#cooldownMs, 'health.trialTimeoutMs');
    if (options.clock !== undefined && typeof options.clock !== 'function') {
      throw errors.invalidArgument('health.clock', 'must be a function returning milliseconds');
    }
    this.#clock = options.clock ?? (() => performance.now());
  }

  /**
   * The circuit state of an instance.
   * @example breakers.state(3) // 'closed'
   */
  state(id: number): CircuitState {
    this.poll();
    return this.#circuits.get(id)?.state ?? 'closed';
  }

  /**
   * Whether a new request may go to the instance now: closed, or half-open with no trial running.
   * @example if (breakers.admissible(3)) send();
   */
  admissible(id: number): boolean {
    this.poll();
    return isAdmissible(this.#circuits.get(id));
  }

  /**
   * admissible() as of the last poll(), without polling again: for a batch of reads (a refresh
   * touching every instance) that polls once before it.
   * @example breakers.poll(); for (const id of ids) open[id] = !breakers.admissibleAsPolled(id);
   */
  admissibleAsPolled(id: number): boolean {
    return isAdmissible(this.#circuits.get(id));
  }

  /**
   * Notes that a request was sent; on a half-open circuit it is the trial, and no other request is
   * admitted until its outcome is reported (or the trial timeout passes).
   * @example breakers.admit(pair.p.id);
   */
  admit(id: number): void {
    this.poll();
    const circuit = this.#circuits.get(id);
    if (circuit === undefined || circuit.state !== 'half_open' || circuit.until !== Infinity) return;
    circuit.until = this.#clock() + this.#trialTimeoutMs;
    this.#nextDeadline = Math.min(this.#nextDeadline, circuit.until);
    this.#emit(id, circuit, 'half_open');
  }

  /**
   * Reports a request that the instance served (any status below 500, 4xx included).
   * @example breakers.recordSuccess(3);
   */
  recordSuccess(id: number): void {
    this.poll();
    const circuit = this.#circuits.get(id);
    if (circuit === undefined) return;
    if (circuit.state === 'closed') {
      // A success breaks the run of failures.
      this.#circuits.delete(id);
    } else if (circuit.state === 'half_open') {
      circuit.count += 1;
      if (circuit.count >= this.#successThreshold) {
        this.#circuits.delete(id);
        this.#emit(id, { state: 'closed', count: 0, until: Infinity }, 'half_open');
      } else {
        circuit.until = Infinity;
        this.#emit(id, circuit, 'half_open');
      }
    }
    // Open: the outcome of a request sent before the circuit opened says nothing about the cool-down.
  }

  /**
   * Reports a transport failure or a 5xx answer from the instance.
   * @example breakers.recordFailure(3);
   */
  recordFailure(id: number): void {
    this.poll();
    const circuit = this.#circuits.get(id);
    if (circuit === undefined) {
      if (this.#failureThreshold === 1) this.#open(id, { state: 'closed', count: 0, until: Infinity });
      else this.#circuits.set(id, { state: 'closed', count: 1, until: Infinity });
    } else if (circuit.state === 'closed') {
      circuit.count += 1;
      if (circuit.count >= this.#failureThreshold) this.#open(id, circuit);
    } else if (circuit.state === 'half_open') {
      this.#open(id, circuit);
    }
  }

  /**
   * Drops what is known about an instance (it left the cluster); it comes back closed.
   * @example breakers.forget(3);
   */
  forget(id: number): void {
    this.#circuits.delete(id);
  }

  /**
   * An accepted refresh listed the instances for which `listed` is true: an open circuit among
   * them turns half-open now (one trial); what is kept about an instance no longer listed is
   * dropped, except an open circuit, kept until its cool-down ends so that an instance removed and
   * re-added at once still gets a trial rather than a clean slate.
   * @example breakers.relisted((id) => registry.get(id) !== undefined);
   */
  relisted(listed: (id: number) => boolean): void {
    this.poll();
    for (const [id, circuit] of this.#circuits) {
      if (!listed(id)) {
        if (circuit.state !== 'open') this.#circuits.delete(id);
      } else if (circuit.state === 'open') {
        this.#halfOpen(id, circuit);
      }
    }
  }

  /**
   * Ends the cool-down of one of `ids` now, for a single trial: the open circuit whose cool-down
   * would end first turns half-open. Returns its id, or undefined when none of `ids` is open or one
   * of them is already half-open (its trial is the one).
   * @example const id = breakers.trialEarly(openDecodes); if (id !== undefined) pickAgain();
   */
  trialEarly(ids: Iterable<number>): number | undefined {
    this.poll();
    let chosen: [number, Circuit] | undefined;
    for (const id of ids) {
      const circuit = this.#circuits.get(id);
      if (circuit === undefined || circuit.state === 'closed') continue;
      if (circuit.state === 'half_open') return undefined;
      if (chosen === undefined || circuit.until < chosen[1].until) chosen = [id, circuit];
    }
    if (chosen === undefined) return undefined;
    this.#halfOpen(chosen[0], chosen[1]);
    return chosen[0];
  }

  /**
   * Applies the transitions that time has made due: open → half-open, expired trials.
   * @example breakers.poll();
   */
  poll(): void {
    // No circuit waits on time (the usual state): nothing to do, and no clock read. A refresh polls
    // once per diff and once for its relisting, and a pick once per request.
    if (this.#nextDeadline === Infinity) return;
    const now = this.#clock();
    if (now < this.#nextDeadline) return;
    let next = Infinity;
    // Only instances with a non-closed circuit or a run of failures are in the map, not the cluster.
    for (const [id, circuit] of this.#circuits) {
      if (circuit.state === 'open' && now >= circuit.until) {
        this.#halfOpen(id, circuit);
      } else if (circuit.state === 'half_open' && now >= circuit.until) {
        circuit.until = Infinity;
        this.#emit(id, circuit, 'half_open');
      }
      if (circuit.state !== 'closed' && circuit.until < next) next = circuit.until;
    }
    this.#nextDeadline = next;
  }

  /**
   * Subscribes to circuit changes; returns the unsubscribe function. A throwing listener is logged, not propagated.
   * @example const off = breakers.onChange((e) => console.log(e.id, e.previous, '→', e.state));
   */
  onChange(listener: (event: CircuitEvent) => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  /**
   * Every instance whose circuit is not closed.
   * @example [...breakers.tripped()]
   */
  *tripped(): Generator<{ id: number; state: CircuitState }, void, undefined> {
    this.poll();
    for (const [id, circuit] of this.#circuits) if (circuit.state !== 'closed') yield { id, state: circuit.state };
  }

  #open(id: number, circuit: Circuit): void {
    const previous = circuit.state;
    const open: Circuit = { state: 'open', count: 0, until: this.#clock() + this.#cooldownMs };
    this.#circuits.set(id, open);
    this.#nextDeadline = Math.min(this.#nextDeadline, open.until);
    this.#emit(id, open, previous);
  }

  #halfOpen(id: number, circuit: Circuit): void {
    circuit.state = 'half_open';
    circuit.count = 0;
    circuit.until = Infinity;
    this.#emit(id, circuit, 'open');
  }

  #emit(id: number, circuit: Circuit, previous: CircuitState): void {
    const event: CircuitEvent = { id, state: circuit.state, previous, admissible: isAdmissible(circuit) };
    for (const listener of this.#listeners) {
      try {
        listener(event);
      } catch (err) {
        console.error('pdlink: circuit listener failed', err);
      }
    }
  }
}

/**
 * Creates the circuit breakers of a Coordinator.
 * @example const breakers = createBreakers({ cooldownMs: 10_000 });
 */
export function createBreakers(options: BreakerOptions = {}): CircuitBreakers {
  return new CircuitBreakers(options);
}

/** The name `createBreakers` had first; library users may still call it. */
export const createHealth = createBreakers;

/** The name `BreakerOptions` had first. */
export type HealthOptions = BreakerOptions;

function isAdmissible(circuit: Circuit | undefined): boolean {
  if (circuit === undefined || circuit.state === 'closed') return true;
  return circuit.state === 'half_open' && circuit.until === Infinity;
}

function positiveInteger(value: number | undefined, fallback: number, path: string): number {
  if (value === undefined) return fallback;
  if (!Number.isSafeInteger(value) || value < 1) throw errors.invalidArgument(path, 'must be a positive integer');
  return value;
}

function positiveNumber(value: number | undefined, fallback: number, path: string): number {
  if (value === undefined) return fallback;
  if (typeof value !== 'number' || !Number.isFinite(value) || value <= 0) throw errors.invalidArgument(path, 'must be a positive number');
  return value;
}
