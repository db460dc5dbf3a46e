/**
 * The metrics of a controller among several on one store: whether it leads, how often it took or
 * gave up the title, and its writes of the stored state (by result, failures by reason, bytes), so a
 * full etcd or a write refused for its size is seen on a dashboard, not only in a log line.
 */
import { Counter, Gauge, type Registry } from '../core/metrics.ts';
import type { LeadershipEvents } from './leadership.ts';

/**
 * Registers the metrics and returns the events that feed them.
 * @example new Leadership({ ..., events: leadershipMetrics(registry) });
 */
export function leadershipMetrics(registry: Registry): LeadershipEvents {
  const leader = new Gauge({
    name: 'pdlink_controller_leader',
    help: 'Whether this controller holds the leader title: 1 yes, 0 no (a standby)',
    registers: [registry],
  });
  leader.set(0);
  const changes = new Counter({
    name: 'pdlink_controller_leader_changes_total',
    help: 'Times this controller took (to="leader") or gave up (to="standby") the leader title',
    labelNames: ['to'],
    registers: [registry],
  });
  const writes = new Counter({
    name: 'pdlink_controller_state_writes_total',
    help: 'Writes of the stored state by result (ok, failed) and, for failures, reason (unreachable, no_space, too_large, refused)',
    labelNames: ['result', 'reason'],
    registers: [registry],
  });
  const bytes = new Counter({
    name: 'pdlink_controller_state_written_bytes_total',
    help: 'Bytes of stored state written (compressed chunks and manifests): what the controller adds to etcd',
    registers: [registry],
  });
  return {
    changed(isLeader) {
      leader.set(isLeader ? 1 : 0);
      changes.inc({ to: isLeader ? 'leader' : 'standby' });
    },
    stateWritten(n) {
      writes.inc({ result: 'ok', reason: '' });
      bytes.inc(n);
    },
    stateWriteFailed(reason) {
      writes.inc({ result: 'failed', reason });
    },
  };
}
