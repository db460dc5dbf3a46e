/**
 * When a planned removal is over. A drain first waits for a snapshot without the instance to
 * reach the Coordinators, then for the instance's requests to finish, bounded by the drain timeout;
 * an instance that stopped answering has nothing left to finish. A drain starts once and may be
 * called off (the topology lists the instance again) until it is over. Kept apart so the rules read
 * in one place, next to nothing that acts on them.
 */
import { unlinkAll } from './agent-calls.ts';
import type { Drain, DrainOutcome, Member } from './member.ts';
import type { Outgoing } from './outgoing.ts';
import type { ControllerTiming } from './types.ts';

/**
 * Whether draining member `m` may now leave the cluster.
 * @example if (drainFinished(member, now, timing)) finishDrain(member);
 */
export function drainFinished(m: Member, now: number, timing: ControllerTiming): boolean {
  return drainOver(m.drain!, m, now, timing);
}

/**
 * Whether `drain` of member `m` (a removal's, or a role move's) is over by the rules above.
 * @example if (drainOver(member.moveDrain, member, now, timing)) switchRole(member);
 */
export function drainOver(drain: Pick<Drain, 'requestedAt' | 'snapshotMark'>, m: Member, now: number, timing: ControllerTiming): boolean {
  if (drain.snapshotMark === undefined) return false;
  if (!m.alive(now, timing.heartbeatTimeoutMs)) return true;
  return m.idle(drain.snapshotMark) || now - drain.requestedAt >= timing.drainTimeoutMs;
}

/**
 * Starts draining `m` (once; a drain under way goes on) and returns when it will be over.
 * @example await startDrain(member, Date.now());
 */
export function startDrain(m: Member, now: number): Promise<DrainOutcome> {
  m.drain ??= newDrain(now);
  return m.drain.done.promise;
}

/**
 * A drain requested at `at`, not yet pushed.
 * @example member.moveDrain ??= newDrain(move.since);
 */
export function newDrain(at: number): Drain {
  return { requestedAt: at, pushed: false, snapshotMark: undefined, done: Promise.withResolvers<DrainOutcome>() };
}

/**
 * Calls off the drain of `m`: it serves again as it did (its peers were not yet posted without it).
 * @example cancelDrain(member);
 */
export function cancelDrain(m: Member): void {
  const drain = m.drain;
  m.drain = undefined;
  drain?.done.resolve('cancelled');
}

/**
 * Ends the drain of `m`: it leaves `members`, and its own side unlinks too (its peers get role
 * posts without it from the replan that follows).
 * @example finishDrain(members, member, client, log);
 */
export function finishDrain(members: Map<number, Member>, m: Member, client: Outgoing, log: (line: string) => void): void {
  members.delete(m.id);
  log(`instance ${m.id} drained and removed`);
  unlinkAll(client, m);
  m.drain!.done.resolve('removed');
}
