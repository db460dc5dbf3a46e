/**
 * The Coordinator's core objects and its two Hono apps, shared by the CLI (`pdlink coordinator`)
 * and the plugin API (`createPdlink`).
 */
import type { LocalPrefillRule } from '../scheduler/pd-path.ts';
import { Hono } from 'hono';
import { createAdmission, resolveAdmissionSettings, type Admission } from '../admission/index.ts';
import type { AdmissionSection } from '../schema/admission-config.ts';
import type { IdentifyHook } from '../http/admission-gate.ts';
import { lostLinks } from '../cluster/lost-links.ts';
import { ClusterRegistry } from '../cluster/registry.ts';
import { coordinatorSource } from '../http/dashboard-coordinator.ts';
import { DashboardFeed } from '../http/dashboard-feed.ts';
import { dashboardRoutes } from '../http/dashboard.ts';
import { onError } from '../http/envelope.ts';
import { inferenceGate, managementRefusal } from '../http/auth.ts';
import { fastFetch, gatedPosts } from '../http/fast-posts.ts';
import { type Gate, gateMiddleware } from '../http/gate.ts';
import { rateGate, type RateLimitSettings } from '../http/rate-limit.ts';
import { InstanceAddressPolicy } from '../net/address-policy.ts';
import { notFoundOf } from '../http/methods.ts';
import { probeRoutes } from '../http/probes.ts';
import { ledgerRoutes, type RequestStats } from '../http/ledger.ts';
import { refreshEndpoint } from '../http/refresh.ts';
import { KvLedger } from '../ledger/index.ts';
import { proxyRoutes, type ProxyApp } from '../http/inference.ts';
import { resolveProxySettings, type ProxySettings } from '../proxy/exchange/settings.ts';
import type { ProxyTracing } from '../proxy/telemetry/trace.ts';
import type { PostRoutes } from '../platform/index.ts';
import { createRegistry, type Registry } from '../core/metrics.ts';
import { collectProcessMetrics } from '../core/process-metrics.ts';
import { createCoordinatorKv, type CoordinatorKvOptions } from './coordinator-kv.ts';
import type { KvEventIntake } from '../kv-events/intake.ts';
import { BODY_LIMIT_MB, SINGLE_NODE_MAX_REQUESTS } from '../schema/coordinator-config.ts';
import {
  createBreakers,
  createScheduler,
  ledgerLoads,
  type CircuitBreakers,
  type PdScheduler,
  type PolicyChoice,
} from '../scheduler/index.ts';

export interface CoordinatorOptions {
  /** Largest accepted management request body, in bytes (default 8 MiB: a 4096-instance snapshot fits). */
  bodyLimitBytes?: number;
  /** Registry to put pdlink's metrics on (default: a new one, never prom-client's global registry). */
  metrics?: Registry;
  /** Pair-selection policy per role (default load_balance for both). */
  policy?: Partial<PolicyChoice>;
  /** How long an open circuit refuses requests before its trial (default 30 s). */
  circuitCooldownMs?: number;
  /** Conditional disaggregation: when D prefills a request itself (default off). */
  localPrefill?: LocalPrefillRule;
  /** Requests in flight this Coordinator may hold on one instance (`single_node_max_requests`, default 1000). */
  maxRequestsPerInstance?: number;
  /** Proxy settings (leg timeouts, retries, in-flight limit); unset keys take their defaults. */
  proxy?: Partial<ProxySettings>;
  /** Per-request traces of the proxy (default: off). */
  tracing?: ProxyTracing;
  /** Also export the process metrics (CPU, memory, event-loop lag); the CLI turns this on. */
  processMetrics?: boolean;
  /** A reason to answer readiness 503 before the registry's own (a standby: "not master"). */
  notReadyReason?: () => string | undefined;
  /** Bearer token every management route but the probes requires (default: none, open). */
  managementToken?: string;
  /** API keys the inference routes accept (default: none, open). */
  apiKeys?: readonly string[];
  /** Whether the client's Authorization header reaches the engines (default: only without API keys). */
  forwardAuthorization?: boolean;
  /** Instance addresses a refresh may name (default: all but link-local, unspecified, multicast and this Coordinator). */
  addressPolicy?: InstanceAddressPolicy;
  /** Per-client token bucket on the inference routes (default: off). */
  rateLimit?: RateLimitSettings;
  /**
   * Admission: priority classes, tenants, the queue, saturation per stage; the keys of the file's
   * `pdlink.admission` (default: on, with its defaults; `{ enabled: false }`: a request past the
   * limits is refused at once, as before admission existed).
   */
  admission?: AdmissionSection;
  /** The gateway's word on who a request is (tenant, priority class), asked first for every request. */
  identify?: IdentifyHook;
  /** Tenant names of API keys, by key; a key without one is named `key-<digest>`. */
  apiKeyTenants?: ReadonlyMap<string, string>;
  /** Routing on the engines' KV events: the index's seed and bounds, precise_prefix's weight, decode-first. */
  kv?: CoordinatorKvOptions;
}

export interface Coordinator {
  /** Management API: refresh, instances, probes, metrics. Mount with `app.route(prefix, managementApp)`. */
  readonly managementApp: Hono;
  /**
   * The management listener's handler: managementApp's answers, with the refresh the Controller
   * sends every second taken to its handler before Hono's dispatch (routing, context and
   * composition per request), after the same token check. `Bun.serve({ fetch: coordinator.managementFetch })`.
   */
  readonly managementFetch: (request: Request, env?: unknown) => Response | Promise<Response>;
  /** Inference API (the OpenAI-compatible PD proxy). */
  readonly inferenceApp: Hono;
  /**
   * The inference listener's handler: inferenceApp's answers, with the two proxy routes taken to
   * the proxy before Hono's dispatch, after the same key check and rate limit as the app's.
   */
  readonly inferenceFetch: (request: Request, env?: unknown) => Response | Promise<Response>;
  /**
   * The POST routes managementFetch takes before Hono, by exact path, for a listener that can
   * dispatch them itself (the runtime seam's `posts`): each answers as managementFetch does.
   */
  readonly managementPosts: PostRoutes;
  /** The POST routes inferenceFetch takes before Hono (the two proxy routes), likewise. */
  readonly inferencePosts: PostRoutes;
  readonly registry: ClusterRegistry;
  /** KV ledger: slot/block reservations and transfer records per request. */
  readonly ledger: KvLedger;
  /** Picks the (prefill, decode) pair of each request. */
  readonly scheduler: PdScheduler;
  /** Per-instance circuit breakers the scheduler consults and the proxy feeds. */
  readonly health: CircuitBreakers;
  /** Admission's queue and stage room; undefined when admission is off. */
  readonly admission: Admission | undefined;
  /** The engines' KV events and the index they feed (precise_prefix, the Conductor API). */
  readonly kv: KvEventIntake;
  readonly metrics: Registry;
  /** Releases timers, pools and subscriptions; idempotent. */
  close(): Promise<void>;
}

/**
 * Builds a Coordinator: the cluster registry and the routes around it.
 * @example const coordinator = createCoordinator(); Bun.serve({ port: 1026, fetch: coordinator.managementFetch });
 */
export function createCoordinator(options: CoordinatorOptions = {}): Coordinator {
  const metrics = options.metrics ?? createRegistry();
  if (options.processMetrics === true) collectProcessMetrics(metrics, 'pdlink_process_');
  const registry = new ClusterRegistry();
  const ledger = new KvLedger({ cluster: registry, metrics });
  // A decode instance that no longer lists a prefill peer has unlinked it: its reservations go.
  const stopLinkWatch = registry.onChange((diff) => {
    for (const { p, d } of lostLinks(diff)) ledger.linkLost(p, d);
  });
  const health = createBreakers(options.circuitCooldownMs === undefined ? {} : { cooldownMs: options.circuitCooldownMs });
  const kv = createCoordinatorKv(options.kv ?? {}, registry, metrics);
  const scheduler = createScheduler({
    kv: kv.precise,
    cluster: registry,
    loads: ledgerLoads(ledger),
    health,
    policy: options.policy ?? {},
    metrics,
    maxRequestsPerInstance: options.maxRequestsPerInstance ?? SINGLE_NODE_MAX_REQUESTS.default,
    ...(options.localPrefill === undefined ? {} : { localPrefill: options.localPrefill }),
  });
  const bodyLimitBytes = options.bodyLimitBytes ?? BODY_LIMIT_MB.default * 1024 * 1024;
  const proxySettings = resolveProxySettings({}, { bodyLimitBytes, ...options.proxy });
  const admissionSettings = resolveAdmissionSettings(options.admission ?? {}, 'admission');
  const admission = admissionSettings.enabled
    ? createAdmission({
        settings: admissionSettings,
        cluster: registry,
        ledger,
        maxPerInstance: options.maxRequestsPerInstance ?? SINGLE_NODE_MAX_REQUESTS.default,
        maxInFlight: proxySettings.maxInFlight,
        metrics,
      })
    : undefined;

  const managementApp = new Hono();
  managementApp.onError(onError);
  managementApp.notFound(notFoundOf(managementApp));
  // Without a token the check would only pass each request on: not mounting it saves a middleware
  // step on every management call, refreshes included.
  const tokenGate = options.managementToken === undefined ? undefined : managementRefusal(options.managementToken);
  if (tokenGate !== undefined) managementApp.use('*', gateMiddleware(tokenGate));
  const addressPolicy = options.addressPolicy ?? new InstanceAddressPolicy(undefined);
  const refresh = refreshEndpoint({ registry, bodyLimitBytes, metrics, addressPolicy });
  managementApp.route('/', refresh.routes);
  // What the proxy took on (MindIE's request count and mean lengths, and pdlink's totals for the SLA planner).
  const requestStats = (): RequestStats => {
    const totals = proxy.requestTotals();
    const mean = (n: number): number => (totals.requests === 0 ? 0 : Math.round(n / totals.requests));
    return { requestNum: proxy.inFlight(), inputLen: mean(totals.promptTokens), outputLen: mean(totals.outputTokens), totals };
  };
  managementApp.route('/', ledgerRoutes({ ledger, cluster: registry, requestStats }));
  managementApp.route('/', probeRoutes({ notReadyReason: () => options.notReadyReason?.() ?? notReadyReason(registry), metrics }));
  const dashboardSource = coordinatorSource({
    registry,
    ledger,
    health,
    ...(admission === undefined ? {} : { admission }),
    kv: { intake: kv.intake, problems: kv.follower.problems },
  });
  const dashboard = new DashboardFeed(dashboardSource);
  managementApp.route('/', dashboardRoutes(dashboard));
  managementApp.route('/', kv.routes);

  const proxy: ProxyApp = proxyRoutes({
    scheduler,
    ledger,
    breakers: health,
    metrics,
    settings: proxySettings,
    ...(options.tracing === undefined ? {} : { tracing: options.tracing }),
    cluster: registry,
    ...(kv.tokenize === undefined ? {} : { tokenize: kv.tokenize }),
    ...(admission === undefined
      ? {}
      : {
          admission: {
            admission,
            identify: options.identify,
            keyTenants: options.apiKeyTenants,
            maxLocalPrefillLength: options.localPrefill?.maxLocalPrefillLength,
          },
        }),
  });
  const inferenceApp = new Hono();
  inferenceApp.onError(onError);
  inferenceApp.notFound(notFoundOf(inferenceApp));
  const forwardAuthorization = options.forwardAuthorization ?? options.apiKeys === undefined;
  // The inference middleware, as plain checks: mounted on the app, and run by the listener's handler.
  const gates: Gate[] = [];
  // With no keys to check and the header forwarded as it came, the check would only pass each
  // request on: not mounting it saves a middleware step on every proxied request.
  if (options.apiKeys !== undefined || !forwardAuthorization) {
    gates.push(inferenceGate({ apiKeys: options.apiKeys, forwardAuthorization }));
  }
  if (options.rateLimit !== undefined) {
    gates.push(rateGate(options.rateLimit));
  }
  for (const gate of gates) inferenceApp.use('*', gateMiddleware(gate));
  inferenceApp.route('/', proxy);
  // The routes the listeners take before Hono, from the same list the apps mounted, after the same
  // checks in the same order: all the app would do with their paths.
  const inferencePosts = gatedPosts(proxy.posts, gates);
  const inferenceFetch = fastFetch(inferenceApp, inferencePosts);
  const managementPosts = gatedPosts(refresh.posts, tokenGate === undefined ? [] : [tokenGate]);
  const managementFetch = fastFetch(managementApp, managementPosts);

  let closed = false;
  return {
    managementApp,
    managementFetch,
    inferenceApp,
    inferenceFetch,
    managementPosts,
    inferencePosts,
    registry,
    ledger,
    scheduler,
    health,
    admission,
    kv: kv.intake,
    metrics,
    async close() {
      if (closed) return;
      closed = true;
      stopLinkWatch();
      dashboard.close();
      dashboardSource.close();
      admission?.close();
      kv.close();
      scheduler.close();
      ledger.close();
    },
  };
}

function notReadyReason(registry: ClusterRegistry): string | undefined {
  const counts = registry.counts();
  if (counts.prefill >= 1 && counts.decode >= 1) return undefined;
  return `not ready: ${counts.prefill} prefill and ${counts.decode} decode instances registered; at least one of each is needed`;
}
