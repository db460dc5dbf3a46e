/**
 * Bearer authentication of pdlink's listeners. The management listeners (Coordinator, agent,
 * controller, simulator) take one cluster token; the inference listener takes any of its API keys.
 * Both compare in constant time (SHA-256 of each side, then `timingSafeEqual`, so neither the
 * content nor the length of a secret leaks through timing). The probes stay open so that
 * orchestrators can check liveness without holding the token.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import type { MiddlewareHandler } from 'hono';
import { errorBody } from '../web/error-body.ts';
import { errors } from '../core/errors.ts';
import { openAiErrorBody } from '../proxy/exchange/errors.ts';
import { type Gate, gateMiddleware } from './gate.ts';

/** Paths that answer without a token: the probes an orchestrator polls. */
const PROBE_PATHS = new Set(['/v1/startup', '/v1/health', '/v1/readiness']);

/**
 * Whether a path is a probe (kept open by the auth middleware and by the connection cap).
 * @example isProbePath('/v2/health/ready') // true
 */
export function isProbePath(path: string): boolean {
  return PROBE_PATHS.has(path) || path.startsWith('/v2/health/');
}

const digest = (text: string) => createHash('sha256').update(text).digest();

/** Holds the digests of the accepted secrets; `accepts` checks a header against all of them. */
export class BearerSecrets {
  readonly #digests: Buffer[];

  /** @example new BearerSecrets(['s3cret']) */
  constructor(secrets: readonly string[]) {
    this.#digests = secrets.map(digest);
  }

  /**
   * Whether `Authorization: Bearer <secret>` names one of the secrets. Every secret is compared,
   * so the time taken does not tell which one matched.
   * @example secrets.accepts(c.req.header('authorization'))
   */
  accepts(header: string | undefined): boolean {
    const given = bearerOf(header);
    if (given === undefined) return false;
    const d = digest(given);
    let ok = false;
    for (const want of this.#digests) ok = timingSafeEqual(d, want) || ok;
    return ok;
  }
}

/**
 * The credential of an `Authorization: Bearer <credential>` header, else undefined.
 * @example bearerOf('Bearer abc') // 'abc'
 */
export function bearerOf(header: string | undefined | null): string | undefined {
  const m = /^Bearer[ ]+(\S+)\s*$/i.exec(header ?? '');
  return m?.[1];
}

const CHALLENGE = { 'www-authenticate': 'Bearer' };
/** A 401's headers as Hono's `c.json(body, 401, CHALLENGE)` writes them. */
const REFUSED_HEADERS = { 'content-type': 'application/json', ...CHALLENGE };

/** The API key each accepted inference request came with, for the rate limit (the header may be gone by then). */
const acceptedKeys = new WeakMap<Request, string>();

/**
 * The API key the inference auth accepted for this request; undefined when keys are off (a bearer
 * the client chose freely must not name its rate-limit bucket, or it could pick a fresh one each time).
 * @example const key = acceptedKeyOf(c.req.raw);
 */
export function acceptedKeyOf(request: Request): string | undefined {
  return acceptedKeys.get(request);
}

/**
 * Management token check for every route but the probes; no token = open (the embedded loopback
 * default). A refused request gets 401 with the error envelope before any handler runs.
 * @example app.use('*', managementAuth(settings.managementToken));
 */
export function managementAuth(token: string | undefined): MiddlewareHandler {
  if (token === undefined) return async (_c, next) => next();
  return gateMiddleware(managementRefusal(token));
}

/**
 * The management token's check on a plain request, for a handler reached without Hono (see
 * apps/coordinator.ts): the 401 the middleware answers, or undefined when the request may go on.
 * @example const refused = managementRefusal(token)(request, env, path); if (refused) return refused;
 */
export function managementRefusal(token: string): Gate {
  const secrets = new BearerSecrets([token]);
  return (request, _env, path) => {
    if (isProbePath(path) || secrets.accepts(request.headers.get('authorization') ?? undefined)) return undefined;
    return new Response(JSON.stringify(errorBody(errors.unauthorized('management token'))), { status: 401, headers: REFUSED_HEADERS });
  };
}

export interface InferenceAuthOptions {
  /** The accepted API keys; undefined = no key needed. */
  readonly apiKeys: readonly string[] | undefined;
  /** Whether the client's `Authorization` header goes on to the engines. */
  readonly forwardAuthorization: boolean;
}

/**
 * API key check for the inference listener, answering 401 in OpenAI's error shape (what OpenAI
 * SDKs turn into `AuthenticationError`); undefined once the request may go on, its key recorded for
 * the rate limit. Unless `forwardAuthorization`, the client's header is dropped here, so no leg can
 * carry it to an engine. Mounted with gateMiddleware, and run as it is before the proxy's handler.
 * @example inferenceApp.use('*', gateMiddleware(inferenceGate({ apiKeys: ['k1'], forwardAuthorization: false })));
 */
export function inferenceGate(options: InferenceAuthOptions): Gate {
  const secrets = options.apiKeys === undefined ? undefined : new BearerSecrets(options.apiKeys);
  const { forwardAuthorization } = options;
  return (request, _env, path) => {
    if (secrets !== undefined && !isProbePath(path)) {
      const header = request.headers.get('authorization') ?? undefined;
      if (!secrets.accepts(header)) {
        return new Response(JSON.stringify(openAiErrorBody(errors.unauthorized('API key'))), { status: 401, headers: REFUSED_HEADERS });
      }
      acceptedKeys.set(request, bearerOf(header)!);
    }
    if (!forwardAuthorization) request.headers.delete('authorization');
    return undefined;
  };
}
