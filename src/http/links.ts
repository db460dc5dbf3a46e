/**
 * `/v1/links` on the instance agent's management listener: LLM-DataDist link_clusters /
 * unlink_clusters over HTTP, and the list of every link with its state. Link failures are
 * status codes in a 200 answer; 400/422 only for requests that are malformed or off-spec.
 */
import { Hono } from 'hono';
import { LINKS_BODY_LIMIT_BYTES } from '../core/limits.ts';
import { clusterIdToWire, formatIpPort, type IpPort } from '../links/endpoint.ts';
import type { LinkManager } from '../links/manager.ts';
import type { InstanceAddressPolicy } from '../net/address-policy.ts';
import { LLM_STATUS, statusName } from '../core/llm-status.ts';
import type { CallResult, EndpointTarget, LinkInfo } from '../links/types.ts';
import { LinkRequestSchema, UnlinkRequestSchema } from '../schema/links.ts';
import { onError } from './envelope.ts';
import { jsonBody } from './json-body.ts';

export { LINKS_BODY_LIMIT_BYTES };

export interface LinksRouteDeps {
  readonly manager: LinkManager;
  /** Local endpoint for a cluster's `local_ip_info` (undefined: the manager's default). */
  readonly endpointFor?: (local: IpPort | undefined) => string | undefined;
  readonly bodyLimitBytes?: number;
  /** Remote addresses this agent may link to (`pdlink.allowed_instance_networks` and the defaults). */
  readonly addressPolicy?: InstanceAddressPolicy;
}

interface WireCluster {
  remote_cluster_id: bigint;
  remote_ip_info: IpPort;
  local_ip_info?: IpPort | undefined;
}

/**
 * Routes `POST /v1/links/link`, `POST /v1/links/unlink` and `GET /v1/links`.
 * @example app.route('/', linkRoutes({ manager }));
 */
export function linkRoutes(deps: LinksRouteDeps): Hono {
  const app = new Hono();
  app.onError(onError);
  const limitBytes = deps.bodyLimitBytes ?? LINKS_BODY_LIMIT_BYTES;

  const toTargets = (clusters: readonly WireCluster[]): EndpointTarget[] =>
    clusters.map((c) => {
      const endpoint = deps.endpointFor?.(c.local_ip_info);
      return {
        remoteClusterId: c.remote_cluster_id,
        remote: c.remote_ip_info,
        ...(c.local_ip_info === undefined ? {} : { local: c.local_ip_info }),
        ...(endpoint === undefined ? {} : { endpoint }),
      };
    });

  app.post('/v1/links/link', jsonBody(LinkRequestSchema, { limitBytes }), async (c) => {
    const body = c.req.valid('json');
    // A cluster whose address the policy refuses is answered LLM_PARAM_INVALID without connecting,
    // so the link call cannot probe hosts the agent must not reach; the others link as asked.
    const refused = body.clusters.map((cl) => deps.addressPolicy?.refusal(cl.remote_ip_info.ip) !== undefined);
    const allowed = body.clusters.filter((_, i) => !refused[i]);
    const result =
      allowed.length === 0
        ? { ret: LLM_STATUS.LLM_SUCCESS, rets: [] }
        : await deps.manager.linkClusters(toTargets(allowed), { timeoutMs: body.timeout });
    return c.json(callBody(body.clusters, withRefused(refused, result)));
  });

  app.post('/v1/links/unlink', jsonBody(UnlinkRequestSchema, { limitBytes }), async (c) => {
    const body = c.req.valid('json');
    const result = await deps.manager.unlinkClusters(toTargets(body.clusters), { timeoutMs: body.timeout, force: body.force });
    return c.json(callBody(body.clusters, result));
  });

  app.get('/v1/links', (c) => c.json({ links: deps.manager.list().map(linkBody) }));
  return app;
}

/** Puts LLM_PARAM_INVALID back at the places of the refused clusters; the call fails if any was refused. */
function withRefused(refused: readonly boolean[], result: CallResult): CallResult {
  if (!refused.includes(true)) return result;
  let next = 0;
  const rets = refused.map((r) => (r ? LLM_STATUS.LLM_PARAM_INVALID : (result.rets[next++] ?? result.ret)));
  return { ret: LLM_STATUS.LLM_PARAM_INVALID, rets };
}

/** Codes go out unsigned, as LLMStatusCode's values (LLM_FAILED = 4294967295). */
function callBody(clusters: readonly WireCluster[], result: CallResult) {
  return {
    ret: result.ret >>> 0,
    ret_name: statusName(result.ret),
    rets: clusters.map((cluster, i) => {
      const code = result.rets[i] ?? result.ret;
      return { remote_cluster_id: clusterIdToWire(cluster.remote_cluster_id), code: code >>> 0, name: statusName(code) };
    }),
  };
}

/** One link as `GET /v1/links` lists it. */
export function linkBody(link: LinkInfo) {
  return {
    endpoint: link.endpoint,
    remote_cluster_id: clusterIdToWire(link.remoteClusterId),
    remote_ip_info: link.remote === undefined ? null : formatIpPort(link.remote),
    side: link.side,
    state: link.state,
    code: link.code >>> 0,
    code_name: statusName(link.code),
    since: new Date(link.since).toISOString(),
  };
}
