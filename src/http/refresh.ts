/**
 * `POST /v1/instances/refresh` (the Controller's topology snapshot) and `GET /v1/instances` (what
 * the Coordinator currently holds). A refresh is all-or-nothing: any problem answers 400 with every
 * issue listed and leaves the registry untouched; success answers 200 with an empty body. Each
 * handler renders its own errors in the envelope, so the routes answer alike standalone and mounted.
 */
import { Hono } from 'hono';
import type { Registry } from 'prom-client';
import type { RegistryDiff } from '../cluster/instance.ts';
import type { ClusterRegistry } from '../cluster/registry.ts';
import { refreshMetrics } from '../cluster/registry-metrics.ts';
import type { InstanceAddressPolicy } from '../core/address-policy.ts';
import { errors, type FieldIssue, optionErrors, PdlinkError } from '../core/errors.ts';
import { parseRefresh } from '../schema/refresh.ts';
import { isPlainSnapshot, parseRefreshText } from '../schema/refresh-plain.ts';
import { LoadsTemplate } from '../schema/refresh-loads.ts';
import { jsonRequestReader } from '../core/json-request.ts';
import { envelopeResponse, onError } from './envelope.ts';

/** A body's text, the value it parsed to, and whether the loads template was tried on it and missed. */
interface ParsedBody {
  readonly text: string;
  readonly value: unknown;
  readonly missed: boolean;
}

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
  const metrics = refreshMetrics(deps.metrics, registry);
  const app = new Hono();

  // The Controller resends its snapshot every second, most often unchanged. A body equal, character
  // for character, to the last one this route applied, while the registry still holds what it
  // applied (nothing else applied a snapshot since), would change nothing and get the same verdict:
  // it is accepted again without being parsed or checked, and the registry asked only to count it.
  // Its addresses are checked again only if the policy changed since (the process learnt of
  // listeners of its own). Only the text is kept: the parsed value would stay alive until the next
  // refresh, which for a large snapshot cost the garbage collector more than this saves.
  let acceptedText: string | undefined;
  // The registry's generation after this route's last apply, and the policy its addresses passed.
  let heldGeneration = -1;
  let heldPolicy = -1;
  const holdsAccepted = () => registry.generation === heldGeneration;
  // Between two changes of the topology, the Controller's snapshots move only loads: a body that is
  // the last accepted text with only loads changed is read by the template of that text (see
  // refresh-loads.ts) and applied as loads alone. The template is made after an apply that moved
  // only loads (the topology held still), from that body's text, and kept while this route's
  // applies move only loads; any other apply drops it.
  let template: LoadsTemplate | undefined;
  // Bodies in a row that moved only loads but missed the template (written another way). It is made
  // anew from the second: a Controller that now writes its snapshots another way gets a template
  // of that way, while one that alternates two ways does not have one made at every refresh.
  let missesInRow = 0;
  let parsed: ParsedBody | undefined;
  const parse = (text: string): unknown => {
    if (text === acceptedText && holdsAccepted()) return new Unparsed(text, undefined, undefined);
    let missed = false;
    if (template !== undefined && holdsAccepted()) {
      const loads = template.read(text);
      if (loads !== undefined) return new Unparsed(text, loads, template);
      missed = true;
    }
    const value = parseRefreshText(text);
    parsed = { text, value, missed };
    return value;
  };

  // The snapshot's own check (a fast path for valid bodies, then Valibot to explain), refused with
  // 400. No snapshot means: apply again what the registry holds.
  const check = (body: unknown) => {
    const started = performance.now();
    const policy = deps.addressPolicy;
    const checkedAt = policy?.generation ?? -1;
    if (body instanceof Unparsed) {
      // Loads read by a template only count while that template is the one kept: an apply between
      // the read and now that changed more than loads dropped it.
      if (holdsAccepted() && (body.loads === undefined || body.template === template)) {
        if (policy !== undefined && policy.generation !== heldPolicy) refuseAddresses(policy, registry.all(), undefined);
        return { snapshot: undefined, resent: body, started, checkedAt };
      }
      // Another refresh was applied since this body was read: it is parsed after all.
      const value = parseRefreshText(body.text);
      parsed = { text: body.text, value, missed: true };
      body = value;
    }
    const snapshot = parseRefresh(body);
    if (policy !== undefined) {
      // What the registry holds passed these checks under this policy when nothing else applied a
      // snapshot since this route's last: an instance listed again at the address it has there is
      // not asked about again (a refresh that moved only loads asks about none).
      refuseAddresses(policy, snapshot.instances, holdsAccepted() && policy.generation === heldPolicy ? registry : undefined);
    }
    // The policy as the addresses were found acceptable (checked now, or unchanged since they were).
    return { snapshot, resent: undefined, started, checkedAt };
  };
  const onRefused = (error: unknown) => {
    parsed = undefined;
    metrics.refreshed(error instanceof PdlinkError && error.code === 'payload_too_large' ? 'too_large' : 'invalid');
  };

  // One handler that renders its own errors, not a validation middleware and a handler under the
  // app's onError: Hono wraps every route of a sub-app with an error handler in a composition of its
  // own, built on each call, which for a 2-instance refresh cost as much as validating it. Its steps
  // are made once: a body read, then one function that answers.
  const read = jsonRequestReader({ limitBytes: bodyLimitBytes, parse });
  const refused = (error: unknown): Response => {
    onRefused(error);
    return envelopeResponse(error as Error, 'POST', REFRESH_PATH);
  };
  const answer = (body: unknown): Response => {
    let checked: ReturnType<typeof check>;
    try {
      checked = check(body);
    } catch (error) {
      return refused(error);
    }
    try {
      const { snapshot, resent, started, checkedAt } = checked;
      if (snapshot === undefined) {
        const loads = resent!.loads;
        if (loads === undefined) {
          registry.repeat();
        } else {
          registry.applyLoads(loads);
          acceptedText = resent!.text;
          missesInRow = 0;
        }
      } else {
        // `valid`: the template describes what the registry holds (nothing else applied a snapshot
        // since this route's last apply).
        const ours = parsed !== undefined && parsed.value === snapshot ? parsed : undefined;
        const valid = template !== undefined && holdsAccepted();
        const diff = registry.apply(snapshot);
        // Another request may have been parsed since this one was: then no text is kept.
        acceptedText = ours?.text;
        if (!movedOnlyLoads(diff) || ours === undefined || !isPlainSnapshot(snapshot)) {
          template = undefined;
          missesInRow = 0;
        } else if (!valid || (ours.missed && ++missesInRow >= 2)) {
          // Made when there was none, or anew after misses in a row; a text that cannot be
          // templated leaves a valid one as it was.
          template = LoadsTemplate.of(ours.text, snapshot) ?? (valid ? template : undefined);
          missesInRow = 0;
        }
      }
      heldGeneration = registry.generation;
      heldPolicy = checkedAt;
      parsed = undefined;
      metrics.applied(
        (performance.now() - started) / 1000,
        snapshot !== undefined ? 'parsed' : resent!.loads === undefined ? 'resent' : 'loads',
      );
      metrics.refreshed('ok');
      // The answer is always the same: built without Hono's header merging.
      return new Response(null, OK);
    } catch (error) {
      return envelopeResponse(error as Error, 'POST', REFRESH_PATH);
    }
  };
  const refresh = (request: Request): Promise<Response> => read(request).then(answer, refused);
  app.post(REFRESH_PATH, (c) => refresh(c.req.raw));

  app.get('/v1/instances', (c) => {
    try {
      return c.body(JSON.stringify(registry.view()), 200, { 'content-type': 'application/json; charset=UTF-8' });
    } catch (error) {
      return onError(error as Error, c);
    }
  });

  return { routes: app, refresh };
}

/**
 * A body not parsed: equal to the last one accepted (no loads), or that text with only loads
 * changed, read by `template`.
 */
class Unparsed {
  constructor(
    readonly text: string,
    readonly loads: Uint32Array | undefined,
    readonly template: LoadsTemplate | undefined,
  ) {}
}

/** Whether an apply changed nothing but free slots and blocks, in place (see ClusterRegistry.apply). */
function movedOnlyLoads(diff: RegistryDiff): boolean {
  if (diff.added.length > 0 || diff.removed.length > 0) return false;
  for (const { before, after } of diff.updated) if (before !== after) return false;
  return true;
}

/**
 * Throws the 400 naming every instance whose address the policy refuses; instances `held` holds
 * at the same address (checked when it took them, under the same policy) are not asked about.
 * A plain loop: a closure and an array per instance were a tenth of a large refresh's time.
 */
function refuseAddresses(
  policy: InstanceAddressPolicy,
  instances: readonly { readonly id: number; readonly ip: string; readonly port: string | number }[],
  held: ClusterRegistry | undefined,
): void {
  let refused: FieldIssue[] | undefined;
  for (let i = 0; i < instances.length; i++) {
    const { id, ip, port } = instances[i]!;
    if (held !== undefined) {
      const before = held.get(id);
      if (before !== undefined && typeof port === 'string' && before.isAt(ip, port)) continue;
    }
    const why = policy.refusal(ip, port);
    if (why !== undefined) (refused ??= []).push({ path: `instances[${i}].ip`, message: `${ip}:${port}: ${why}` });
  }
  if (refused !== undefined) throw errors.invalidBody(refused);
}
