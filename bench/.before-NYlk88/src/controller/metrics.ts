/**
 * The controller's Prometheus metrics: instances by state, role posts and snapshot pushes by
 * result, and the time one evaluation of the cluster takes.
 */
import { Counter, Gauge, Histogram, type Registry } from '../core/metrics.ts';
import type { Controller, ControllerEvents } from './controller.ts';

/**
 * Events that feed the counters; `watch` adds the per-state gauge once the controller exists.
 * @example const m = controllerMetrics(registry); const controller = new Controller({ spec, events: m.events }); m.watch(controller);
 */
export function controllerMetrics(registry: Registry): { events: ControllerEvents; watch(controller: Controller): void } {
  const posts = new Counter({
    name: 'pdlink_controller_role_posts_total',
    help: 'Role posts by result',
    labelNames: ['result'],
    registers: [registry],
  });
  const pushes = new Counter({
    name: 'pdlink_controller_snapshots_total',
    help: 'Snapshot pushes to Coordinators by result',
    labelNames: ['result'],
    registers: [registry],
  });
  const evaluation = new Histogram({
    name: 'pdlink_controller_evaluate_seconds',
    help: 'Time of one evaluation of the whole cluster',
    buckets: [0.0001, 0.0005, 0.001, 0.005, 0.01, 0.05, 0.1],
    registers: [registry],
  });
  return {
    events: {
      rolePost: (ok) => posts.inc({ result: ok ? 'ok' : 'failed' }),
      snapshotPush: (ok) => pushes.inc({ result: ok ? 'ok' : 'failed' }),
      evaluated: (ms) => evaluation.observe(ms / 1000),
    },
    watch(controller) {
      new Gauge({
        name: 'pdlink_controller_instances',
        help: 'Instances by controller state',
        labelNames: ['state'],
        registers: [registry],
        collect() {
          this.reset();
          for (const m of controller.view().members) this.inc({ state: m.state });
        },
      });
    },
  };
}
