/**
 * The OpenAI-compatible routes of the inference listener: `POST /v1/completions` and
 * `POST /v1/chat/completions`, each served by a (P, D) pair, and `GET /v1/models`, the models the
 * registry's instances serve. Every completion's response carries the request's `X-Request-Id`,
 * and every error the proxy itself produces has the OpenAI error shape.
 */
import { Hono } from 'hono';
import { errors, PdlinkError } from '../core/errors.ts';
import { jsonRequestReader } from '../web/json-request.ts';
import { platform } from '../platform/index.ts';
import { createRegistry, type Registry } from '../core/metrics.ts';
import { parseCompletionBody, type CompletionKind } from '../schema/completions.ts';
import { asPdlinkError, errorResponse, REQUEST_ID_HEADER } from '../proxy/exchange/errors.ts';
import { Exchange, type ExchangeDeps } from '../proxy/exchange/exchange.ts';
import { viaHasHop, viaHeader, type ClientHeaders } from '../proxy/legs/legs.ts';
import { InFlightLimit } from '../proxy/exchange/limiter.ts';
import { ProxyMetrics } from '../proxy/telemetry/metrics.ts';
import type { BreakerReporter, PairPicker, ReservationLedger } from '../proxy/exchange/ports.ts';
import { ClusterCapacity } from '../proxy/placement/placement.ts';
import type { ClusterView } from '../cluster/instance.ts';
import { type FastPost, mountPosts } from './fast-posts.ts';
import { modelList } from './models.ts';
import { fetchCapWarning } from '../proxy/legs/upstream.ts';
import { checkSettings, resolveProxySettings, type ProxySettings } from '../proxy/exchange/settings.ts';
import type { ProxyTracing } from '../proxy/telemetry/trace.ts';
import type { ExchangeRequest } from '../proxy/exchange/types.ts';
import { AdmissionGate, type AdmissionGateOptions } from './admission-gate.ts';

/** Longest accepted client request id (the KV ledger shows it beside its own key, so both obey its limit). */
export const MAX_REQUEST_ID_LENGTH = 512;
/** The two routes' paths. */
export const COMPLETIONS_PATH = '/v1/completions';
export const CHAT_COMPLETIONS_PATH = '/v1/chat/completions';
export const MODELS_PATH = '/v1/models';
/** Each route's `api` label in the proxy's metrics. */
const API_OF: Readonly<Record<CompletionKind, string>> = { completions: 'completions', chat: 'chat_completions' };
const REQUEST_ID = /^[\x21-\x7e]+$/;

export interface ProxyDeps {
  /** Chooses the (P, D) pair of each request (the scheduler). */
  scheduler: PairPicker;
  /** Holds the pair's slots and KV blocks for the request (the KV ledger). */
  ledger: ReservationLedger;
  /** The circuit breakers, told every instance's answer; optional. */
  breakers?: BreakerReporter;
  /** Registry for the proxy's metrics (default: a private one). */
  metrics?: Registry;
  /** Settings (default: MindIE's defaults, see resolveProxySettings). */
  settings?: ProxySettings;
  /** Per-request traces (default: off, see proxy/telemetry/trace.ts). */
  tracing?: ProxyTracing;
  /**
   * The registry: what `GET /v1/models` lists, and the largest prompt an instance can hold (a
   * larger one is refused with 400). Absent: no models are listed and prompts are not checked.
   */
  cluster?: Pick<ClusterView, 'all' | 'onChange'>;
  /**
   * Admission (classes, tenants, a queue, saturation per stage); absent: a request past
   * `maxInFlight` gets 429 at once, as before admission existed.
   */
  admission?: Omit<AdmissionGateOptions, 'metrics' | 'tracing'>;
  /** The prompt's token ids by the model's tokenizer (src/tokenizer/); absent, text prompts are estimated. */
  tokenize?: ExchangeDeps['tokenize'];
}

/** The proxy as mounted: its routes plus what operators and tests look at. */
export interface ProxyApp extends Hono {
  /** Requests currently in flight. */
  readonly inFlight: () => number;
  /** Requests taken on so far, their prompt tokens and the output tokens they asked for. */
  readonly requestTotals: () => { readonly requests: number; readonly promptTokens: number; readonly outputTokens: number };
  /**
   * One of the two routes without Hono: what `POST /v1/completions` (`completions`) or
   * `POST /v1/chat/completions` (`chat`) answers, for a listener that sends those paths here before
   * Hono's dispatch (apps/coordinator.ts). `env` is the runtime's per-request value, as Hono's env.
   */
  readonly answer: (kind: CompletionKind, request: Request, env: unknown) => Promise<Response>;
  /** The two completion routes, as the app mounts them and a listener takes them first (fast-posts.ts). */
  readonly posts: readonly FastPost[];
}

/**
 * Builds the proxy's Hono sub-app; mount it on the inference listener with `app.route('/', proxyRoutes(deps))`.
 * @example inferenceApp.route('/', proxyRoutes({ scheduler, ledger, breakers, metrics, settings: resolveProxySettings(file) }));
 */
export function proxyRoutes(deps: ProxyDeps): ProxyApp {
  const settings = checkSettings(deps.settings ?? resolveProxySettings());
  // Only https legs go over Bun's fetch and its cap; plain ones use the platform's own client (platform/h1-client.ts).
  if (settings.engineTls !== undefined) warnOnce(fetchCapWarning(settings.maxInFlight, process.env));
  if (settings.maxIdleConnections !== undefined) platform.limitIdleConnections(settings.maxIdleConnections);
  const metrics = new ProxyMetrics(deps.metrics ?? createRegistry());
  const limit = new InFlightLimit(settings.maxInFlight);
  const gate = deps.admission === undefined ? undefined : new AdmissionGate({ ...deps.admission, metrics, tracing: deps.tracing });
  const exchangeDeps: ExchangeDeps = {
    picker: deps.scheduler,
    ledger: deps.ledger,
    breakers: countedBreakers(deps.breakers, metrics),
    metrics,
    settings,
    ...(deps.tracing === undefined ? {} : { tracing: deps.tracing }),
    ...(deps.cluster === undefined ? {} : { capacity: new ClusterCapacity(deps.cluster) }),
    ...(deps.tokenize === undefined ? {} : { tokenize: deps.tokenize }),
  };
  const traced = deps.tracing !== undefined;
  const hopToken = `pdlink-${crypto.randomUUID().slice(0, 8)}`;

  const readBody = jsonRequestReader({ limitBytes: settings.bodyLimitBytes });
  const serve = async (request: Request, env: unknown, kind: CompletionKind): Promise<Response> => {
    const api = API_OF[kind];
    const headers = request.headers;
    const given = headers.get(REQUEST_ID_HEADER) ?? undefined;
    if (given !== undefined && (given.length > MAX_REQUEST_ID_LENGTH || !REQUEST_ID.test(given))) {
      metrics.requestRefused(api, 'invalid');
      const message = `must be 1 to ${MAX_REQUEST_ID_LENGTH} visible ASCII characters`;
      // The client's id cannot be echoed; a fresh one still lets the answer be traced.
      return errorResponse(errors.badRequest(`X-Request-Id: ${message}`, [{ path: 'X-Request-Id', message }]), crypto.randomUUID());
    }
    // The ledger's key is always the proxy's own; a client without an id gets the same one, so
    // its answer, both legs and its ledger record carry a single id.
    const transferId = crypto.randomUUID();
    const requestId = given ?? transferId;
    const clientVia = headers.get('via') ?? undefined;
    if (viaHasHop(clientVia, hopToken)) {
      metrics.requestRefused(api, 'invalid');
      return errorResponse(errors.loopDetected(clientVia ?? ''), requestId);
    }
    // With admission, the in-flight limit is admission's: a request past it waits rather than being refused.
    if (gate === undefined && !limit.tryAcquire()) {
      metrics.requestRefused(api, 'rejected');
      return errorResponse(errors.tooManyRequests(settings.maxInFlight), requestId);
    }
    metrics.requestStarted();
    let body;
    try {
      body = parseCompletionBody(kind, await readBody(request));
    } catch (err) {
      if (gate === undefined) limit.release();
      // Counted as client_abort in pdlink_pd_requests_total, never logged: clients leave all the time.
      const gone = request.signal.aborted || (err instanceof PdlinkError && err.code === 'client_closed');
      metrics.requestEnded(api, gone ? 'client_abort' : err instanceof PdlinkError ? 'invalid' : 'internal');
      return errorResponse(asPdlinkError(err), requestId);
    }
    keepConnectionOpen(request, env);
    const exchangeRequest: ExchangeRequest = {
      kind,
      api,
      body,
      requestId,
      transferId,
      clientHeaders: forwardedHeaders(headers, viaHeader(clientVia, hopToken), traced),
      clientSignal: request.signal,
    };
    if (gate !== undefined)
      return gate.run(request, env, kind, exchangeRequest, (admitted, onEnd) => new Exchange(admitted, exchangeDeps, onEnd));
    const exchange = new Exchange(exchangeRequest, exchangeDeps, () => limit.release());
    return exchange.run();
  };

  const app = new Hono();
  app.onError((err, c) => errorResponse(asPdlinkError(err), c.req.header(REQUEST_ID_HEADER)));
  // What the app's onError would answer for an error the route let out.
  const answer = (kind: CompletionKind, request: Request, env: unknown): Promise<Response> =>
    serve(request, env, kind).catch((err: unknown) =>
      errorResponse(asPdlinkError(err), request.headers.get(REQUEST_ID_HEADER) ?? undefined),
    );
  const posts: readonly FastPost[] = [
    { path: COMPLETIONS_PATH, answer: (request, env) => answer('completions', request, env) },
    { path: CHAT_COMPLETIONS_PATH, answer: (request, env) => answer('chat', request, env) },
  ];
  mountPosts(app, posts);
  const models = modelList(deps.cluster);
  app.get(MODELS_PATH, (c) => c.json(models.list()));
  return Object.assign(app, { inFlight: () => gate?.inFlight ?? limit.count, answer, posts, requestTotals: () => metrics.requestTotals() });
}

/** The breakers, with every failure charged to an instance also counted by instance (pdlink_pd_instance_failures_total). */
function countedBreakers(breakers: BreakerReporter | undefined, metrics: ProxyMetrics): BreakerReporter {
  return {
    recordSuccess: (id) => breakers?.recordSuccess(id),
    recordFailure: (id) => {
      metrics.instanceFailed(id);
      breakers?.recordFailure(id);
    },
  };
}

/**
 * The client headers the legs may forward, with this proxy's hop added to `Via`; with tracing on,
 * also the client's trace context, which the request's trace continues (the legs carry their own).
 */
function forwardedHeaders(client: Headers, via: string, traced: boolean): ClientHeaders {
  const authorization = client.get('authorization') ?? undefined;
  if (!traced) return authorization === undefined ? { via } : { via, authorization };
  const headers: Record<string, string> = { via };
  if (authorization !== undefined) headers['authorization'] = authorization;
  for (const name of ['traceparent', 'tracestate']) {
    const value = client.get(name);
    if (value !== null) headers[name] = value;
  }
  return headers;
}

const warned = new Set<string>();

/** A process-wide warning about the environment is worth saying once, not once per mounted proxy. */
function warnOnce(message: string | undefined): void {
  if (message === undefined || warned.has(message)) return;
  warned.add(message);
  console.warn(message);
}

/**
 * Lifts the listener's idle timeout for this request: prefill and the gaps of a stream may be
 * silent for longer than it, and the proxy bounds the request by its own deadlines.
 */
function keepConnectionOpen(request: Request, env: unknown): void {
  platform.keepOpen(request, env);
}
