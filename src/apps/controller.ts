/**
 * Composition root of `pdlink controller`: the control loop, its metrics and its management app
 * (probes, `/metrics`, the controller API). Shared by the CLI and anyone embedding a controller.
 */
import { Hono } from 'hono';
import { collectProcessMetrics } from '../core/process-metrics.ts';
import { Controller, type ControllerEvents } from '../controller/controller.ts';
import { Leadership } from '../controller/leadership.ts';
import { leadershipMetrics } from '../controller/leadership-metrics.ts';
import { storeMetrics } from '../store/metrics.ts';
import type { Store } from '../store/store.ts';
import { controllerMetrics } from '../controller/metrics.ts';
import { plannerMetrics } from '../controller/planner/metrics.ts';
import { Planner } from '../controller/planner/planner.ts';
import { RequestTotals } from '../controller/planner/request-totals.ts';
import { PLANNER_DEFAULTS } from '../controller/planner/settings.ts';
import { desiredInstance, rankDevices } from '../controller/spec.ts';
import type { TopologySpec } from '../controller/types.ts';
import { ManagementClient } from '../controller/outgoing.ts';
import type { ApplyOutcome } from '../controller/topology-change.ts';
import { TopologyFileRecord, type TopologyFileStatus } from '../controller/topology-file.ts';
import { errors } from '../core/errors.ts';
import { managementAuth } from '../http/auth.ts';
import { controllerRoutes } from '../http/controller.ts';
import { controllerSource } from '../http/dashboard-controller.ts';
import { DashboardFeed } from '../http/dashboard-feed.ts';
import { dashboardRoutes } from '../http/dashboard.ts';
import { onError } from '../http/envelope.ts';
import { notFoundOf } from '../http/methods.ts';
import { probeRoutes } from '../http/probes.ts';
import { createRegistry, type Registry } from '../core/metrics.ts';
import type { RankTableFile, TopologyFile } from '../schema/controller-topology.ts';
import type { ClientTlsOptions } from '../platform/tls-options.ts';

export interface ControllerAppOptions {
  readonly spec: TopologySpec;
  /** Devices of instances added through the API without their own. */
  readonly rankTable?: RankTableFile | undefined;
  /** static_info defaults of instances added through the API. */
  readonly staticDefaults?: NonNullable<TopologyFile['static_info']>;
  readonly metrics?: Registry;
  /** Also export process metrics; the CLI turns this on. */
  readonly processMetrics?: boolean;
  readonly log?: (line: string) => void;
  /** Several controllers on one store: this one stands by until elected (see `campaign`). */
  readonly ha?: { readonly store: Store; readonly ttlSeconds: number } | undefined;
  /** TLS of the calls to agents and Coordinators (the topology's `tls.client_*`). */
  readonly clientTls?: ClientTlsOptions;
  /** Bearer token this app requires (but on probes) and the controller sends to agents and Coordinators. */
  readonly managementToken?: string | undefined;
  /** The topology file `spec` was read from and how to read it again (reloads, `POST /v1/cluster/reload`). */
  readonly topologyFile?: { readonly path: string; readonly load: () => TopologySpec };
}

export interface ControllerApp {
  readonly controller: Controller;
  readonly managementApp: Hono;
  readonly metrics: Registry;
  /**
   * Applies a changed topology file as a diff against the one applied before; a refused one
   * (clashes, too many removals without `force`) changes nothing and stays the one to diff against.
   * @example app.applyFile(loadTopology(path).spec);
   */
  applyFile(next: TopologySpec, options?: { readonly force?: boolean }): ApplyOutcome;
  /**
   * Reads the topology file again and applies it; the outcome is also what `GET /v1/cluster` shows.
   * @example app.reloadFile(); // the CLI's watcher
   */
  reloadFile(options?: { readonly force?: boolean }): TopologyFileStatus;
  /** The P:D planner (planner/planner.ts); call `planner.start()` with the loop (nothing runs while its mode is off). */
  readonly planner: Planner;
  /** With `ha`: runs for leader under this management URL (known once the listener is up). */
  campaign(url: string): void;
  /** Stops the loop; idempotent. */
  close(): Promise<void>;
}

/**
 * Builds a controller and its routes; call `controller.start()` to run the loop.
 * @example const app = createControllerApp({ spec }); app.controller.start(); Bun.serve({ fetch: app.managementApp.fetch });
 */
export function createControllerApp(options: ControllerAppOptions): ControllerApp {
  const metrics = options.metrics ?? createRegistry();
  if (options.processMetrics === true) collectProcessMetrics(metrics, 'pdlink_process_');
  const m = controllerMetrics(metrics);
  const source = controllerSource(
    () => controller,
    () => fileRecord?.status,
    () => planner.view(),
  );
  const ha = options.ha;
  let leadership: Leadership | undefined;
  let fileSpec = options.spec;
  // The metrics, the topology page and the leadership hear the same events.
  const events: ControllerEvents = {
    ...m.events,
    rolePost(ok) {
      m.events.rolePost?.(ok);
      source.events.rolePost(ok);
      if (ok) leadership?.rolePosted();
    },
    snapshotPush(ok) {
      m.events.snapshotPush?.(ok);
      source.events.snapshotPush(ok);
    },
    evaluated(ms) {
      m.events.evaluated?.(ms);
      source.events.evaluated(ms);
    },
    composed: (snapshot, generation) => leadership?.composed(snapshot, generation),
    // A move's record is stored at each step, so a new leader knows the move under way.
    moved: () => leadership?.rolePosted(),
    moveEnded: (move, outcome, seconds) => plannerEvents.moveEnded(move, outcome, seconds),
  };
  const client = new ManagementClient(options.spec.timing.httpTimeoutMs, options.managementToken, options.clientTls);
  const controller: Controller = new Controller({
    spec: options.spec,
    events,
    leading: ha === undefined,
    // Several controllers: the leader acts only while its lease is proven live (store/election.ts).
    mayAct: () => leadership === undefined || leadership.mayAct(),
    client,
    ...(options.log === undefined ? {} : { log: options.log }),
  });
  const plannerSettingsNow = options.spec.planner ?? PLANNER_DEFAULTS;
  const planner: Planner = new Planner({
    settings: plannerSettingsNow,
    port: {
      view: () => controller.view(),
      acting: () => controller.leading && (leadership === undefined || leadership.mayAct()),
      move: (id, to, request) => controller.move(id, to, request),
      get moves() {
        return controller.moves;
      },
      coordinators: () => controller.view().coordinators.map((c) => c.url),
    },
    totals: new RequestTotals(client, plannerSettingsNow.windowMs),
    ...(options.log === undefined ? {} : { log: options.log }),
    decided: (decision) => plannerEvents.decided(decision),
  });
  const plannerEvents = plannerMetrics(
    metrics,
    () => planner.view(),
    () => controller.moves.current !== undefined,
  );
  if (ha !== undefined) storeMetrics(metrics, ha.store);
  const leadershipEvents = ha === undefined ? undefined : leadershipMetrics(metrics);
  m.watch(controller);
  const devices = rankDevices(options.rankTable);
  const defaults = options.staticDefaults ?? {};
  const file = options.topologyFile;
  const fileRecord = file === undefined ? undefined : new TopologyFileRecord(file.path, Date.now, options.spec.instances.length);
  const applyFile = (next: TopologySpec, applyOptions: { readonly force?: boolean } = {}): ApplyOutcome => {
    const outcome = controller.apply(fileSpec, next, applyOptions);
    if (outcome.applied) {
      fileSpec = next;
      leadership?.fileApplied();
      planner.configure(next.planner ?? PLANNER_DEFAULTS);
    }
    fileRecord?.record(outcome);
    return outcome;
  };
  const reloadFile = (reloadOptions: { readonly force?: boolean } = {}): TopologyFileStatus => {
    if (file === undefined || fileRecord === undefined) throw errors.conflictWith('this controller runs without a topology file', 'path');
    let next: TopologySpec;
    try {
      next = file.load();
    } catch (err) {
      const status = fileRecord.unreadable(err instanceof Error ? err.message : String(err));
      options.log?.(`topology change ignored: ${status.message}`);
      return status;
    }
    applyFile(next, reloadOptions);
    return fileRecord.status;
  };

  const managementApp = new Hono();
  managementApp.onError(onError);
  managementApp.notFound(notFoundOf(managementApp));
  managementApp.use('*', managementAuth(options.managementToken));
  managementApp.route(
    '/',
    controllerRoutes({
      controller,
      resolve: (entry) => desiredInstance(entry, '', defaults, devices),
      leadership: () => leadership?.view(),
      topologyFile: () => fileRecord?.status,
      reload: reloadFile,
      planner: () => planner.view(),
    }),
  );
  managementApp.route('/', probeRoutes({ notReadyReason: () => undefined, metrics }));
  const dashboard = new DashboardFeed(source);
  managementApp.route('/', dashboardRoutes(dashboard));
  return {
    controller,
    managementApp,
    metrics,
    applyFile,
    reloadFile,
    planner,
    campaign(url) {
      if (ha === undefined || leadership !== undefined) return;
      leadership = new Leadership({
        controller,
        store: ha.store,
        url,
        ttlSeconds: ha.ttlSeconds,
        fileSpec: () => fileSpec,
        ...(options.log === undefined ? {} : { log: options.log }),
        ...(leadershipEvents === undefined ? {} : { events: leadershipEvents }),
      });
      leadership.start();
    },
    async close() {
      planner.stop();
      dashboard.close();
      await leadership?.close();
      await controller.close();
      await ha?.store.close();
    },
  };
}
