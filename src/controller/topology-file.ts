/**
 * The last load of the topology file, kept for the operator: a broken or refused file used to be
 * reported on stderr alone, where nobody watching `GET /v1/cluster` or the topology page saw that
 * the cluster was not running what the file says. Each read ends applied (with what it changed) or
 * refused (with why, and the field paths when the file did not validate); the running topology is
 * the last applied one either way.
 */
import type { FieldIssue } from '../core/errors.ts';
import { describeChange, type ApplyOutcome, type TopologyChange } from './topology-change.ts';

export interface TopologyFileStatus {
  readonly path: string;
  /** When the file was last read (ms since the epoch). */
  readonly readAt: number;
  readonly outcome: 'applied' | 'refused';
  /** What the load did, or why nothing of it was applied. */
  readonly message: string;
  readonly issues: readonly FieldIssue[];
  /** What it changed, or would have changed; undefined when the file could not be read. */
  readonly change: TopologyChange | undefined;
}

export class TopologyFileRecord {
  readonly #path: string;
  readonly #now: () => number;
  #status: TopologyFileStatus;

  /** @example const record = new TopologyFileRecord('cluster.json', Date.now, spec.instances.length); */
  constructor(path: string, now: () => number, instances: number) {
    this.#path = path;
    this.#now = now;
    this.#status = this.#make('applied', `read at start: ${instances} instance${instances === 1 ? '' : 's'}`, [], undefined);
  }

  get status(): TopologyFileStatus {
    return this.#status;
  }

  /** A read that validated, applied or refused as `outcome` says. */
  record(outcome: ApplyOutcome): TopologyFileStatus {
    this.#status = outcome.applied
      ? this.#make('applied', `applied: ${describeChange(outcome.change)}`, [], outcome.change)
      : this.#make('refused', `not applied, the running topology is kept: ${outcome.reason}`, outcome.issues, outcome.change);
    return this.#status;
  }

  /** A read that failed (unreadable, not JSON, off the schema): `message` names the file and the fields. */
  unreadable(message: string): TopologyFileStatus {
    this.#status = this.#make('refused', `not applied, the running topology is kept: ${message}`, [], undefined);
    return this.#status;
  }

  #make(outcome: TopologyFileStatus['outcome'], message: string, issues: readonly FieldIssue[], change: TopologyChange | undefined) {
    return { path: this.#path, readAt: this.#now(), outcome, message, issues, change };
  }
}
