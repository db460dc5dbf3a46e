/**
 * `POST /v1/instances/refresh` (the Controller's topology snapshot) and `GET /v1/instances` (what
 * the Coordinator currently holds). The route reads the body within its bound and hands it to the
 * refresh intake (cluster/refresh-intake.ts), which checks and applies it all-or-nothing: any
 * problem answers 400 with every issue listed and leaves the registry untouched; success answers 200
 * with an empty body. Each handler renders its own errors in the envelope, so the routes answer
 * alike standalone and mounted.
 */
import { Hono } from 'hono';
import type { Registry } from 'prom-client';
import type { ClusterRegistry } from '../cluster/registry.ts';
import { RefreshIntake } from '../cluster/refresh-intake.ts';
import type { InstanceAddressPolicy } from '../net/address-policy.ts';
import { optionErrors } from '../core/errors.ts';
import { jsonRequestReader } from '../web/json-request.ts';
import { envelopeResponse, onError } from './envelope.ts';
import { type FastPost, mountPosts } from './fast-posts.ts';

/** The Controller's refresh path. */
export const REFRESH_PATH = '/v1/instances/refresh';

/** An accepted refresh answers 200 with an empty body. */
const OK: ResponseInit = { status: 200 };

export interface RefreshRouteDeps {
  registry: ClusterRegistry;
  /** Largest accepted refresh body in bytes; a 4096-instance snapshot is about 1.3 MB of compact JSON. */
  bodyLimitBytes: number;
  /** Registry for `pdlink_refresh_total`, `pdlink_refresh_apply_seconds`, `pdlink_instances`. */
  metrics: Registry;
  /** Instance addresses the proxy may be sent to (`pdlink.allowed_instance_networks`, the defaults, not itself). */
  addressPolicy?: InstanceAddressPolicy;
}

/**
 * The refresh and instance-listing routes, with their own error envelope.
 * @example app.route('/', refreshRoutes({ registry, bodyLimitBytes: 8 << 20, metrics }));
 */
export function refreshRoutes(deps: RefreshRouteDeps): Hono {
  return refreshEndpoint(deps).routes;
}

/** The refresh routes, and the refresh's own handler on a plain request. */
export interface RefreshEndpoint {
  readonly routes: Hono;
  /**
   * `POST /v1/instances/refresh` without Hono: what the route answers, for a listener that sends
   * this one path here before Hono's dispatch (apps/coordinator.ts). The route calls it too.
   */
  readonly refresh: (request: Request) => Promise<Response>;
  /** The refresh route, as the routes mount it and a listener takes it first (fast-posts.ts). */
  readonly posts: readonly FastPost[];
}

/**
 * The refresh routes and the refresh handler they share (metrics registered once).
 * @example const { routes, refresh } = refreshEndpoint({ registry, bodyLimitBytes: 8 << 20, metrics });
 */
export function refreshEndpoint(deps: RefreshRouteDeps): RefreshEndpoint {
  const { registry, bodyLimitBytes } = deps;
  if (!Number.isSafeInteger(bodyLimitBytes) || bodyLimitBytes <= 0) {
    throw optionErrors.positiveInteger('bodyLimitBytes');
  }
  const intake = new RefreshIntake({ registry, metrics: deps.metrics, addressPolicy: deps.addressPolicy });

  // One handler that renders its own errors, not a validation middleware and a handler under the
  // app's onError: Hono wraps every route of a sub-app with an error handler in a composition of its
  // own, built on each call, which for a 2-instance refresh cost as much as validating it. Its steps
  // are made once: a body read, then one function that answers.
  const read = jsonRequestReader({ limitBytes: bodyLimitBytes, parse: intake.parse });
  const refused = (error: unknown): Response => {
    intake.refused(error);
    return envelopeResponse(error as Error, 'POST', REFRESH_PATH);
  };
  const answer = (body: unknown): Response => {
    try {
      intake.accept(body);
    } catch (error) {
      return envelopeResponse(error as Error, 'POST', REFRESH_PATH);
    }
    // The answer is always the same: built without Hono's header merging.
    return new Response(null, OK);
  };
  const refresh = (request: Request): Promise<Response> => read(request).then(answer, refused);

  const posts: readonly FastPost[] = [{ path: REFRESH_PATH, answer: refresh }];
  const app = new Hono();
  mountPosts(app, posts);
  app.get('/v1/instances', (c) => {
    try {
      return c.body(JSON.stringify(registry.view()), 200, { 'content-type': 'application/json; charset=UTF-8' });
    } catch (error) {
      return onError(error as Error, c);
    }
  });
  return { routes: app, refresh, posts };
}
