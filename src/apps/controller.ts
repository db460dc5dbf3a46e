/**
 * Composition root of `pdlink controller`: the control loop, its metrics and its management app
 * (probes, `/metrics`, the controller API). Shared by the CLI and anyone embedding a controller.
 */
import { Hono } from 'hono';
import { collectDefaultMetrics } from 'prom-client';
import { Controller, type ControllerEvents } from '../controller/controller.ts';
import { controllerMetrics } from '../controller/metrics.ts';
import { desiredInstance, rankDevices } from '../controller/spec.ts';
import type { ClusterSpec } from '../controller/types.ts';
import { ManagementClient } from '../controller/outgoing.ts';
import { managementAuth } from '../http/auth.ts';
import { controllerRoutes } from '../http/controller.ts';
import { controllerSource } from '../http/dashboard-controller.ts';
import { DashboardFeed } from '../http/dashboard-feed.ts';
import { dashboardRoutes } from '../http/dashboard.ts';
import { onError, onNotFound } from '../http/envelope.ts';
import { probeRoutes } from '../http/probes.ts';
import { createRegistry, type Registry } from '../core/metrics.ts';
import type { RankTableFile, TopologyFile } from '../schema/controller-topology.ts';

export interface ControllerAppOptions {
  readonly spec: ClusterSpec;
  /** Devices of instances added through the API without their own. */
  readonly rankTable?: RankTableFile | undefined;
  /** static_info defaults of instances added through the API. */
  readonly staticDefaults?: NonNullable<TopologyFile['static_info']>;
  readonly metrics?: Registry;
  /** Also export process metrics; the CLI turns this on. */
  readonly processMetrics?: boolean;
  readonly log?: (line: string) => void;
  /** Bearer token this app requires (but on probes) and the controller sends to agents and Coordinators. */
  readonly managementToken?: string | undefined;
}

export interface ControllerApp {
  readonly controller: Controller;
  readonly managementApp: Hono;
  readonly metrics: Registry;
  /** Stops the loop; idempotent. */
  close(): Promise<void>;
}

/**
 * Builds a controller and its routes; call `controller.start()` to run the loop.
 * @example const app = createControllerApp({ spec }); app.controller.start(); Bun.serve({ fetch: app.managementApp.fetch });
 */
export function createControllerApp(options: ControllerAppOptions): ControllerApp {
  const metrics = options.metrics ?? createRegistry();
  if (options.processMetrics === true) collectDefaultMetrics({ register: metrics, prefix: 'pdlink_process_' });
  const m = controllerMetrics(metrics);
  const source = controllerSource(() => controller);
  // The metrics and the topology page hear the same events.
  const events: ControllerEvents = {
    rolePost(ok) {
      m.events.rolePost?.(ok);
      source.events.rolePost(ok);
    },
    snapshotPush(ok) {
      m.events.snapshotPush?.(ok);
      source.events.snapshotPush(ok);
    },
    evaluated(ms) {
      m.events.evaluated?.(ms);
      source.events.evaluated(ms);
    },
  };
  const controller: Controller = new Controller({
    spec: options.spec,
    events,
    client: new ManagementClient(options.spec.timing.httpTimeoutMs, options.managementToken),
    ...(options.log === undefined ? {} : { log: options.log }),
  });
  m.watch(controller);
  const devices = rankDevices(options.rankTable);
  const defaults = options.staticDefaults ?? {};

  const managementApp = new Hono();
  managementApp.onError(onError);
  managementApp.notFound(onNotFound);
  managementApp.use('*', managementAuth(options.managementToken));
  managementApp.route('/', controllerRoutes({ controller, resolve: (entry) => desiredInstance(entry, '', defaults, devices) }));
  managementApp.route('/', probeRoutes({ notReadyReason: () => undefined, metrics }));
  const dashboard = new DashboardFeed(source);
  managementApp.route('/', dashboardRoutes(dashboard));
  const close = (): Promise<void> => {
    dashboard.close();
    return controller.close();
  };
  return { controller, managementApp, metrics, close };
}
