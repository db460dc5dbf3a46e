/**
 * The POST routes a listener answers before Hono's dispatch (the Controller's refresh every second,
 * every proxied completion), written once: each is a path and the route's whole answer, errors
 * included. From that one list the Hono app mounts them (behind its middleware) and the listener
 * takes them first (behind the same gates, in the same order), so the two ways a request can come
 * in answer alike. A performance twin of Hono's router for these few exact paths: routing,
 * context and middleware composition per request were a visible share of a refresh's and of a
 * proxied request's cost. fast-posts.test.ts sends the same requests both ways and compares the
 * answers.
 */
import type { Hono } from 'hono';
import type { PostRoute, PostRoutes } from '../platform/index.ts';
import type { Gate } from './gate.ts';
import { urlPathIs } from './methods.ts';

/** One route of the table. */
export interface FastPost {
  readonly path: string;
  /** What the route answers, errors included (as the app's onError would render them). */
  readonly answer: PostRoute;
}

/**
 * Registers the routes on a Hono app, where the app's middleware runs before them.
 * @example mountPosts(app, [{ path: '/v1/completions', answer }]);
 */
export function mountPosts(app: Hono, posts: readonly FastPost[]): void {
  for (const { path, answer } of posts) app.post(path, (c) => answer(c.req.raw, c.env));
}

/**
 * The routes as a listener takes them before Hono: each after `gates`, in order, as the app's
 * middleware runs them.
 * @example const posts = gatedPosts(proxy.posts, [apiKeyGate]);
 */
export function gatedPosts(posts: readonly FastPost[], gates: readonly Gate[]): PostRoutes {
  const out: Record<string, PostRoute> = {};
  for (const { path, answer } of posts) {
    out[path] =
      gates.length === 0
        ? answer
        : (request, env) => {
            for (const gate of gates) {
              const refused = gate(request, env, path);
              if (refused !== undefined) return refused;
            }
            return answer(request, env);
          };
  }
  return out;
}

/**
 * A listener's handler: a POST to one of `posts`' exact paths goes to it, anything else to the app.
 * @example Bun.serve({ fetch: fastFetch(app, gatedPosts(posts, gates)) });
 */
export function fastFetch(app: Hono, posts: PostRoutes): (request: Request, env?: unknown) => Response | Promise<Response> {
  const routes = Object.entries(posts);
  return (request, env) => {
    if (request.method === 'POST') {
      const url = request.url;
      for (let i = 0; i < routes.length; i++) if (urlPathIs(url, routes[i]![0])) return routes[i]![1](request, env);
    }
    return app.fetch(request, env);
  };
}
