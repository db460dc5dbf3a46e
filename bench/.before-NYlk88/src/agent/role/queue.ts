/**
 * The work queue of the role driver: role posts, retry rounds and clears of links a peer
 * dropped, run one at a time in arrival order so no two of them touch the links at once.
 */
import { errors } from '../../core/errors.ts';
import type { RoleRequest } from '../../schema/role.ts';
import type { PlannedLink } from './plan.ts';

/** Posts that may wait behind the one being applied; more answer 429. */
export const MAX_QUEUED_POSTS = 64;

export type RoleJob =
  | { readonly kind: 'post'; readonly request: RoleRequest; readonly plan: readonly PlannedLink[]; readonly acceptedAt: number }
  | { readonly kind: 'retry' }
  | { readonly kind: 'clear'; readonly endpoint: string; readonly remoteClusterId: bigint };

export type RolePostJob = Extract<RoleJob, { kind: 'post' }>;

export class RoleJobQueue {
  readonly #run: (job: RoleJob) => Promise<void>;
  readonly #jobs: RoleJob[] = [];
  #running: Promise<void> | undefined;
  #closed = false;

  /**
   * Runs each job with `run`, which must not throw: a rejection would end the current round of the queue.
   * @example const queue = new RoleJobQueue((job) => this.#run(job));
   */
  constructor(run: (job: RoleJob) => Promise<void>) {
    this.#run = run;
  }

  /** Posts waiting, not counting the one being applied. */
  get posts(): number {
    return this.#jobs.filter((j) => j.kind === 'post').length;
  }

  /**
   * Queues a post; one of the same role waiting last is replaced, since the latest desired set wins.
   * Throws the 429 when {@link MAX_QUEUED_POSTS} already wait.
   * @example queue.post({ kind: 'post', request, plan, acceptedAt: clock.now() });
   */
  post(job: RolePostJob): void {
    const last = this.#jobs.at(-1);
    if (last?.kind === 'post' && last.request.role === job.request.role) this.#jobs[this.#jobs.length - 1] = job;
    else if (this.posts >= MAX_QUEUED_POSTS) throw errors.tooManyRequests(MAX_QUEUED_POSTS);
    else this.#jobs.push(job);
    this.#kick();
  }

  /**
   * Queues a retry round unless one already waits.
   * @example queue.retry();
   */
  retry(): void {
    if (!this.#jobs.some((j) => j.kind === 'retry')) this.#jobs.push({ kind: 'retry' });
    this.#kick();
  }

  /**
   * Queues the unlink of a client link the peer dropped, if it is still not desired when its turn comes.
   * @example queue.clear('0', 7n);
   */
  clear(endpoint: string, remoteClusterId: bigint): void {
    this.#jobs.push({ kind: 'clear', endpoint, remoteClusterId });
    this.#kick();
  }

  /** Resolves when no job is queued or running. */
  async settled(): Promise<void> {
    while (this.#running !== undefined) await this.#running;
  }

  /** Drops the waiting jobs and runs no more; the running one finishes (await {@link settled}). */
  close(): void {
    this.#closed = true;
    this.#jobs.length = 0;
  }

  #kick(): void {
    if (this.#running !== undefined || this.#jobs.length === 0 || this.#closed) return;
    this.#running = this.#drain().finally(() => {
      this.#running = undefined;
      this.#kick();
    });
  }

  async #drain(): Promise<void> {
    for (let job = this.#jobs.shift(); job !== undefined; job = this.#jobs.shift()) await this.#run(job);
  }
}
