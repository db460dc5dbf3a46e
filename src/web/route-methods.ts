/**
 * Tells "no such path" from "no such method on this path" (RFC 9110 §15.5.6): Hono calls its
 * notFound handler for both, but a known path asked with a method it does not serve must be 405
 * with an `Allow` header listing the methods it does serve. The answer is read from the app's own
 * route table, so every route mounted on a listener counts and none is listed twice by hand. How
 * the two answers look is the caller's: pdlink's envelope (http/methods.ts) or the simulator's
 * OpenAI-style errors.
 */
import type { Context, Hono, NotFoundHandler } from 'hono';
import { TrieRouter } from 'hono/router/trie-router';

interface MethodIndex {
  /** Route count the index was built from; routes added later rebuild it. */
  readonly routes: number;
  /** Every method route under one pseudo-method, the handler being the route's method. */
  readonly router: TrieRouter<string>;
}

const indexes = new WeakMap<Hono, MethodIndex>();

function indexOf(app: Hono): TrieRouter<string> {
  const cached = indexes.get(app);
  if (cached !== undefined && cached.routes === app.routes.length) return cached.router;
  const router = new TrieRouter<string>();
  // Middleware (method ALL) serves no method of its own, so it makes no path known.
  for (const route of app.routes) if (route.method !== 'ALL') router.add('ALL', route.path, route.method.toUpperCase());
  indexes.set(app, { routes: app.routes.length, router });
  return router;
}

/**
 * Methods `app` serves on `path`, sorted, HEAD included wherever GET is (Hono answers HEAD from
 * GET); empty for a path no route matches.
 * @example allowedMethods(app, '/v1/role/prefill') // ['POST']
 */
export function allowedMethods(app: Hono, path: string): string[] {
  const methods = new Set(
    indexOf(app)
      .match('GET', path)[0]
      .map(([method]) => method),
  );
  if (methods.has('GET')) methods.add('HEAD');
  return [...methods].sort();
}

/** How a listener renders its two answers; the Allow header is added here. */
export interface NotFoundRenderers {
  notFound(c: Context): Response;
  methodNotAllowed(c: Context, allow: readonly string[]): Response;
}

/**
 * A notFound handler for `app` answering 405 + Allow on a known path, `render.notFound` otherwise.
 * @example app.notFound(methodAwareNotFound(app, { notFound: onNotFound, methodNotAllowed: onMethodNotAllowed }));
 */
export function methodAwareNotFound(app: Hono, render: NotFoundRenderers): NotFoundHandler {
  return (c) => {
    const allow = allowedMethods(app, c.req.path);
    if (allow.length === 0 || allow.includes(c.req.method)) return render.notFound(c);
    const res = render.methodNotAllowed(c, allow);
    res.headers.set('allow', allow.join(', '));
    return res;
  };
}
