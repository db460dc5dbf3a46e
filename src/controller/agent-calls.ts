/**
 * The calls to an agent's management API: reading its status, posting the role body a member
 * should hold, and the best-effort empty body that unlinks a drained instance's own side. Apart
 * from the loop so the loop keeps only when to call and what follows; what counts as an answer
 * lives here.
 */
import { readAgentStatus, type AgentObservation } from './agent-status.ts';
import type { Member } from './member.ts';
import type { Outgoing } from './outgoing.ts';
import { devicesOf } from './role-plan.ts';

/**
 * Posts `m`'s wanted role body; true when the agent answered 200 with result "ok". A refusal or a
 * failed call is recorded on the member, never thrown.
 * @example if (await postRole(client, member, Date.now)) member.postedKey = key;
 */
export async function postRole(client: Outgoing, m: Member, now: () => number): Promise<boolean> {
  try {
    const { status, body } = await client.post(`${m.spec.manageUrl}/v1/role/${m.role}`, m.wantedBody);
    const result = typeof body === 'object' && body !== null ? (body as { result?: unknown }).result : undefined;
    const ok = status === 200 && typeof result === 'string' && result.toLowerCase() === 'ok';
    if (!ok) m.error(`role post answered ${status}: ${JSON.stringify(body)}`, now());
    return ok;
  } catch (err) {
    m.error(`role post failed: ${err instanceof Error ? err.message : String(err)}`, now());
    return false;
  }
}

/**
 * Tells a leaving instance to drop all its links; best effort, the instance is leaving anyway.
 * @example unlinkAll(client, member);
 */
export function unlinkAll(client: Outgoing, m: Member): void {
  const url = `${m.spec.manageUrl}/v1/role/${m.role}`;
  client.post(url, { local: { server_ip: m.spec.serverIp, device: devicesOf(m.spec) }, peers: [] }).catch(() => {});
}

/**
 * Reads `m`'s agent status; throws when the agent does not answer 200 with a status it can read.
 * @example member.observation = await fetchStatus(client, member);
 */
export async function fetchStatus(client: Outgoing, m: Member): Promise<AgentObservation> {
  const { status, body } = await client.get(`${m.spec.manageUrl}/v1/status`);
  const observation = status === 200 ? readAgentStatus(body) : undefined;
  if (observation === undefined) throw new Error(`status answered ${status}`);
  return observation;
}
