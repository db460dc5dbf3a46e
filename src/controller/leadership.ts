/**
 * Several controllers on one store, one of them acting: this wires the controller loop to an
 * election. The winner reads the stored state and leads from it when it is complete (else from its
 * topology file, reading every agent before it posts); a loser, or a holder whose title lapsed,
 * stands by. The loop acts (posts roles, pushes snapshots) only while `mayAct()`: the title is held
 * and its lease proven live. While leading, the state is written back after every change
 * (state-keeper.ts: guarded, only what changed, invalidated when a write fails).
 */
import { Election } from '../store/election.ts';
import type { StoreErrorReason } from '../store/store-error.ts';
import { KEYS, type Store } from '../store/store.ts';
import type { Controller } from './controller.ts';
import type { RefreshBody } from './snapshot.ts';
import { StateKeeper } from './state-keeper.ts';
import { StateRecords } from './state-records.ts';
import { decodeRecords, NOTHING_STORED } from './stored-state.ts';
import type { TopologySpec } from './types.ts';

/** Pause between reads of the stored state when a fresh leader cannot read it. */
const TAKEOVER_RETRY_MS = 250;

export interface LeadershipView {
  readonly state: 'leader' | 'standby';
  /** The leader's management URL as last seen (its own when leading). */
  readonly leader: string | undefined;
  readonly store: 'memory' | 'etcd';
  readonly storeConnected: boolean;
}

/** What the controller's metrics hear of leadership and the stored state. */
export interface LeadershipEvents {
  stateWritten?(bytes: number): void;
  stateWriteFailed?(reason: StoreErrorReason): void;
  /** The title was taken (true) or given up (false). */
  changed?(leader: boolean): void;
}

export interface LeadershipOptions {
  readonly controller: Controller;
  readonly store: Store;
  /** This controller's management URL: what the others name as the leader. */
  readonly url: string;
  readonly ttlSeconds: number;
  /** The topology file as this controller last loaded it. */
  readonly fileSpec: () => TopologySpec;
  readonly log?: (line: string) => void;
  readonly events?: LeadershipEvents;
}

export class Leadership {
  readonly #controller: Controller;
  readonly #store: Store;
  readonly #election: Election;
  readonly #log: (line: string) => void;
  readonly #fileSpec: () => TopologySpec;
  readonly #records = new StateRecords();
  readonly #keeper: StateKeeper;
  #generation = 0;
  /** Bumped on every change of leadership, so a late takeover read does not act after a step-down. */
  #term = 0;

  /** @example const leadership = new Leadership({ controller, store, url, ttlSeconds: 2, fileSpec }); leadership.start(); */
  constructor(options: LeadershipOptions) {
    this.#controller = options.controller;
    this.#store = options.store;
    this.#log = options.log ?? (() => {});
    this.#fileSpec = options.fileSpec;
    const election = new Election({
      store: options.store,
      key: KEYS.controllerLeader,
      value: options.url,
      ttlSeconds: options.ttlSeconds,
      log: this.#log,
    });
    this.#election = election;
    this.#keeper = new StateKeeper({
      store: options.store,
      // Written only while the title is proven: during an etcd election the write waits rather than fails.
      guard: () => {
        const lease = election.leaseId;
        return lease === undefined || !election.mayAct() ? undefined : { key: KEYS.controllerLeader, lease };
      },
      lost: (reason) => election.lost(reason),
      source: () => ({
        records: this.#records.build(this.#controller.storedState(), this.#fileSpec().instances),
        meta: { generation: this.#generation, leader: options.url },
      }),
      log: this.#log,
      events: {
        written: (bytes) => options.events?.stateWritten?.(bytes),
        failed: (reason) => options.events?.stateWriteFailed?.(reason),
      },
    });
    election.onChange((leader) => {
      const term = ++this.#term;
      options.events?.changed?.(leader);
      if (leader) void this.#takeOver(term);
      else {
        this.#keeper.stop();
        this.#controller.follow();
      }
    });
  }

  start(): void {
    this.#election.start();
  }

  /** Whether the loop may act now: this controller holds the title and has proven its lease live. */
  mayAct(): boolean {
    return this.#controller.leading && this.#election.mayAct();
  }

  view(): LeadershipView {
    return {
      state: this.#election.leader && this.#controller.leading ? 'leader' : 'standby',
      leader: this.#election.holder,
      store: this.#store.kind,
      storeConnected: this.#store.connected(),
    };
  }

  /** The topology file changed (already applied to the controller): the stored copy follows. */
  fileApplied(): void {
    this.#keeper.request();
  }

  /** A role post was accepted: the assignments changed. */
  rolePosted(): void {
    this.#keeper.request();
  }

  /** A snapshot is on its way to the Coordinators: its shape (and any member change) is stored. */
  composed(snapshot: RefreshBody, generation: number): void {
    this.#generation = generation;
    this.#records.composed(snapshot);
    this.#keeper.request();
  }

  /** Resigns (the key goes at once, so a standby takes over without waiting for the lease). */
  async close(): Promise<void> {
    this.#term++;
    this.#keeper.stop();
    await this.#keeper.idle();
    await this.#election.close();
  }

  async #takeOver(term: number): Promise<void> {
    // Leading blind would re-post every role, so the stored state is read first, retried while this term lasts.
    while (term === this.#term) {
      try {
        const read = await this.#keeper.read();
        if (term !== this.#term) return;
        const decoded = read.ok ? decodeRecords(read.records, read.meta) : undefined;
        const state = decoded?.state ?? NOTHING_STORED;
        if (!read.ok) this.#log(`no stored state to trust (${read.reason}): leading from the topology file, each agent read first`);
        this.#records.seed(state.snapshot);
        this.#generation = state.generation;
        this.#controller.lead(state);
        // The stored instances are the last leader's file plus API changes; a file edited since
        // (all controllers down, or edited here only) applies on top as the same diff a reload makes.
        const mine = this.#fileSpec();
        const theirs = decoded?.file;
        if (theirs !== undefined && JSON.stringify(theirs) !== JSON.stringify(mine.instances)) {
          this.#controller.apply({ ...mine, instances: theirs }, mine);
          this.#log('topology file differs from the stored one: applied as a diff');
        }
        this.#keeper.start();
        this.#keeper.request();
        return;
      } catch (err) {
        this.#log(`elected but cannot read the stored state: ${err instanceof Error ? err.message : String(err)}`);
        await new Promise((resolve) => setTimeout(resolve, TAKEOVER_RETRY_MS));
      }
    }
  }
}
