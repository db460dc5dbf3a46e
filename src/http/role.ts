/**
 * The instance role API on the agent's management listener: `POST /v1/role/{role}` (MindIE's
 * "Specifying an Instance Role") and `GET /v1/status`. A post is checked and queued, answered
 * 200 `{"result":"OK"}` at once; the links follow in the background and show in the status.
 * 400: request errors (unknown role, content type, empty or malformed body); 422: a body that
 * does not meet the specification, or local devices this agent does not serve.
 */
import { Hono, type MiddlewareHandler } from 'hono';
import type { InstanceAddressPolicy } from '../net/address-policy.ts';
import { errors, optionErrors, type FieldIssue } from '../core/errors.ts';
import type { RoleController } from '../agent/role/driver.ts';
import { ROLE_BODY_LIMIT_BYTES } from '../core/limits.ts';
import { isRole, type Role, RoleBody, toRoleRequest } from '../schema/role.ts';
import { onError } from './envelope.ts';
import { jsonBody } from './json-body.ts';

export { ROLE_BODY_LIMIT_BYTES };

export interface RoleRouteDeps {
  readonly controller: RoleController;
  readonly bodyLimitBytes?: number;
  /** Peer device addresses this agent may link with (`pdlink.allowed_instance_networks` and the defaults). */
  readonly addressPolicy?: InstanceAddressPolicy;
}

/**
 * Routes `POST /v1/role/:role` and `GET /v1/status`.
 * @example app.route('/', roleRoutes({ controller: agent.role }));
 */
export function roleRoutes(deps: RoleRouteDeps): Hono {
  const limitBytes = deps.bodyLimitBytes ?? ROLE_BODY_LIMIT_BYTES;
  if (!Number.isInteger(limitBytes) || limitBytes < 1) throw optionErrors.positiveInteger('bodyLimitBytes');
  const app = new Hono();
  app.onError(onError);

  // The URL is checked before the body: a wrong role is a request error whatever the body says.
  app.post('/v1/role/:role', roleParam, jsonBody(RoleBody, { limitBytes, object: true }), (c) => {
    const body = c.req.valid('json');
    const refused = refusedPeers(body.peers ?? [], deps.addressPolicy);
    if (refused.length > 0) throw errors.unprocessable(refused);
    deps.controller.submit(toRoleRequest(c.req.param('role') as Role, body));
    return c.json({ result: 'OK' });
  });

  app.get('/v1/status', (c) => c.json(deps.controller.status()));
  return app;
}

/** Every peer device address the policy refuses, by field path; nothing is queued when there is one. */
function refusedPeers(
  peers: readonly { device: readonly { device_ip: string }[] }[],
  policy: InstanceAddressPolicy | undefined,
): FieldIssue[] {
  if (policy === undefined) return [];
  return peers.flatMap((peer, i) =>
    peer.device.flatMap((d, j) => {
      const why = policy.refusal(d.device_ip);
      return why === undefined ? [] : [{ path: `peers[${i}].device[${j}].device_ip`, message: `${d.device_ip}: ${why}` }];
    }),
  );
}

/** Lets only `prefill` and `decode` through as the `:role` of the path (400 otherwise). */
const roleParam: MiddlewareHandler = async (c, next) => {
  const role = c.req.param('role') ?? '';
  if (!isRole(role)) throw errors.invalidArgument('role', `must be "prefill" or "decode", got ${JSON.stringify(role)}`);
  await next();
};
