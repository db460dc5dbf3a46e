/**
 * The calls to an agent's management API: reading its status, posting the role body a member
 * should hold, and the best-effort empty body that unlinks a drained instance's own side. Apart
 * from the loop so the loop keeps only when to call and what follows; what counts as an answer
 * lives here.
 */
import { readAgentStatus, shapeChanged, type AgentObservation } from './agent-status.ts';
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

/** The loop's clock and event marks (see Member.postDoneMark), as the calls below record them. */
export interface CallClock {
  now(): number;
  mark(): number;
}

/**
 * Posts the body `m` should hold and records the outcome on it: in force, or retried after `retryMs`.
 * @example const ok = await postWanted(client, member, clock, timing.roleRetryMs);
 */
export async function postWanted(client: Outgoing, m: Member, clock: CallClock, retryMs: number): Promise<boolean> {
  const key = m.wantedKey;
  m.postInFlight = true;
  let ok = false;
  try {
    ok = await postRole(client, m, clock.now);
  } finally {
    m.postInFlight = false;
    m.postDoneMark = clock.mark();
  }
  if (ok) m.postedKey = key;
  else m.nextPostAt = clock.now() + retryMs;
  return ok;
}

/**
 * Polls the status of `m` and records it; true when what the snapshot reads of it changed. Silence
 * is recorded by not answering: the heartbeat counts it.
 * @example if (await pollMember(client, member, clock, timing.heartbeatTimeoutMs)) dirty = true;
 */
export async function pollMember(client: Outgoing, m: Member, clock: CallClock, heartbeatTimeoutMs: number): Promise<boolean> {
  m.polling = true;
  const from = clock.mark();
  try {
    const observation = await fetchStatus(client, m);
    const wasAlive = m.alive(clock.now(), heartbeatTimeoutMs);
    const changed = shapeChanged(m.observation, observation);
    m.lastSeenAt = clock.now();
    m.observation = observation;
    m.observedMark = from;
    // Back from the dead (or first seen): its role goes now, not at the next retry.
    if (!wasAlive) m.nextPostAt = 0;
    return changed;
  } catch {
    return false;
  } finally {
    m.polling = false;
  }
}
