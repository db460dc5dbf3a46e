/**
 * Several controllers on one store, one of them acting: this wires the controller loop to an
 * election. The winner reads the stored state and leads from it; a loser (or a leader that lost
 * the store for its whole lease) stands by. While leading, the state is written back after every
 * accepted role post and every snapshot sent: one write in flight, the latest state next.
 */
import { Election } from '../store/election.ts';
import { KEYS, type Store } from '../store/store.ts';
import type { Controller } from './controller.ts';
import type { RefreshBody } from './snapshot.ts';
import type { TopologySpec } from './types.ts';
import { readAssignments, readDesired, readGeneration } from './stored-state.ts';

/** Pause between reads of the stored state when a fresh leader cannot read it. */
const TAKEOVER_RETRY_MS = 250;

export interface LeadershipView {
  readonly state: 'leader' | 'standby';
  /** The leader's management URL as last seen (its own when leading). */
  readonly leader: string | undefined;
  readonly store: 'memory' | 'etcd';
  readonly storeConnected: boolean;
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
}

export class Leadership {
  readonly #controller: Controller;
  readonly #store: Store;
  readonly #election: Election;
  readonly #log: (line: string) => void;
  readonly #fileSpec: () => TopologySpec;
  #snapshot: { snapshot: RefreshBody; generation: number } | undefined;
  #writing: Promise<void> | undefined;
  #again = false;
  /** Bumped on every change of leadership, so a late takeover read does not act after a step-down. */
  #term = 0;

  /** @example const leadership = new Leadership({ controller, store, url, ttlSeconds: 2 }); leadership.start(); */
  constructor(options: LeadershipOptions) {
    this.#controller = options.controller;
    this.#store = options.store;
    this.#log = options.log ?? (() => {});
    this.#fileSpec = options.fileSpec;
    this.#election = new Election({
      store: options.store,
      key: KEYS.controllerLeader,
      value: options.url,
      ttlSeconds: options.ttlSeconds,
      log: this.#log,
    });
    this.#election.onChange((leader) => {
      const term = ++this.#term;
      if (leader) void this.#takeOver(term);
      else this.#controller.follow();
    });
  }

  start(): void {
    this.#election.start();
  }

  view(): LeadershipView {
    return {
      state: this.#controller.leading ? 'leader' : 'standby',
      leader: this.#election.holder,
      store: this.#store.kind,
      storeConnected: this.#store.connected(),
    };
  }

  /** The topology file changed (already applied to the controller): the stored copy follows. */
  fileApplied(): void {
    this.#persistSoon();
  }

  /** A role post was accepted: the assignments changed. */
  rolePosted(): void {
    this.#persistSoon();
  }

  /** A snapshot is on its way to the Coordinators: it becomes the stored last snapshot. */
  composed(snapshot: RefreshBody, generation: number): void {
    this.#snapshot = { snapshot, generation };
    this.#persistSoon();
  }

  /** Resigns (the key goes at once, so a standby takes over without waiting for the lease). */
  async close(): Promise<void> {
    this.#term++;
    await this.#election.close();
    await this.#writing;
  }

  async #takeOver(term: number): Promise<void> {
    // Leading blind would re-post every role, so the stored state is read first, retried while this term lasts.
    while (term === this.#term) {
      try {
        const [desired, assignments, snapshot, file] = await Promise.all([
          this.#store.get(KEYS.desired),
          this.#store.get(KEYS.assignments),
          this.#store.get(KEYS.snapshot),
          this.#store.get(KEYS.file),
        ]);
        if (term !== this.#term) return;
        this.#controller.lead({
          desired: readDesired(desired),
          assignments: readAssignments(assignments),
          generation: readGeneration(snapshot),
        });
        // The stored instances are the last leader's file plus API changes; a file edited since
        // (all controllers down, or edited here only) applies on top as the same diff a reload makes.
        const mine = this.#fileSpec();
        const theirs = readDesired(file);
        if (theirs !== undefined && JSON.stringify(theirs) !== JSON.stringify(mine.instances)) {
          this.#controller.apply({ ...mine, instances: theirs }, mine);
          this.#log('topology file differs from the stored one: applied as a diff');
        }
        this.#persistSoon();
        return;
      } catch (err) {
        this.#log(`elected but cannot read the stored state: ${err instanceof Error ? err.message : String(err)}`);
        await new Promise((resolve) => setTimeout(resolve, TAKEOVER_RETRY_MS));
      }
    }
  }

  #persistSoon(): void {
    if (!this.#controller.leading) return;
    if (this.#writing !== undefined) {
      this.#again = true;
      return;
    }
    this.#writing = (async () => {
      do {
        this.#again = false;
        await this.#persist().catch((err: unknown) => {
          this.#log(`cannot write the state to the store: ${err instanceof Error ? err.message : String(err)}`);
        });
      } while (this.#again && this.#controller.leading);
    })().finally(() => {
      this.#writing = undefined;
    });
  }

  async #persist(): Promise<void> {
    if (!this.#controller.leading) return;
    const state = this.#controller.storedState();
    const writes = [
      this.#store.put(KEYS.desired, JSON.stringify(state.desired)),
      this.#store.put(KEYS.assignments, JSON.stringify(state.assignments)),
      this.#store.put(KEYS.file, JSON.stringify(this.#fileSpec().instances)),
    ];
    if (this.#snapshot !== undefined) writes.push(this.#store.put(KEYS.snapshot, JSON.stringify(this.#snapshot)));
    await Promise.all(writes);
  }
}
