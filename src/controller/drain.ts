/**
 * When a planned removal is over. A drain first waits for a snapshot without the instance to
 * reach the Coordinators, then for the instance's requests to finish, bounded by the drain timeout;
 * an instance that stopped answering has nothing left to finish. Kept apart so the rule reads in
 * one place, next to nothing that acts on it.
 */
import type { Member } from './member.ts';
import type { ControllerTiming } from './types.ts';

/**
 * Whether draining member `m` may now leave the cluster.
 * @example if (drainFinished(member, now, timing)) finishDrain(member);
 */
export function drainFinished(m: Member, now: number, timing: ControllerTiming): boolean {
  const drain = m.drain!;
  if (drain.snapshotMark === undefined) return false;
  if (!m.alive(now, timing.heartbeatTimeoutMs)) return true;
  return m.idle(drain.snapshotMark) || now - drain.requestedAt >= timing.drainTimeoutMs;
}
