/**
 * The links a role request asks for, and the checks of a request that need the agent's own
 * devices (the body schema cannot know them).
 *
 * Pairing: local device i links with device i of every peer (by position in `device`, not by
 * logical id; the seed's own example repeats a peer's logical id).
 * Remote endpoint rule: a peer device listens on `device_ip:(link_base_port + device_logical_id)`
 * and its cluster id is `clusterIdFor(device_ip, that port)` (src/links/endpoint.ts), the rule by
 * which every agent opens its own devices. So all agents of a deployment share `link_base_port`
 * and leave `cluster_id` unset.
 * Local devices: the agent opened its device contexts from its configuration; a request's local
 * devices must be among them (same logical id, same address). Reopening contexts to match a
 * request would drop the links of every other device and move listen addresses that peers have
 * already been told; a mismatch is a deployment error and is answered 422 with the field named.
 */
import type { FieldIssue } from '../../core/errors.ts';
import { clusterIdFor, formatIpPort, type IpPort } from '../../links/endpoint.ts';
import { linkKey } from '../../links/key.ts';
import type { RoleRequest } from '../../schema/role.ts';

/** A local device context the agent serves (the subset of AgentDevice the plan needs). */
export interface LocalDevice {
  /** Endpoint name in the link manager: the logical id as text. */
  readonly endpoint: string;
  readonly ip: string;
  readonly port: number;
  readonly clusterId: bigint;
}

/** One desired link: local device `device` ↔ device `device` of peer `target`. */
export interface PlannedLink {
  /** `endpoint` + NUL + remote cluster id: the link manager's key of this link. */
  readonly key: string;
  /** Peer's `server_ip`, when the request named one (it is optional). */
  readonly target: string | undefined;
  /** Position of the device pair in `local.device` and the peer's `device`. */
  readonly device: number;
  /** Local endpoint (logical id as text). */
  readonly endpoint: string;
  readonly peerLogicalId: number;
  readonly remote: IpPort;
  readonly remoteClusterId: bigint;
}

export interface LinkPlan {
  readonly links: readonly PlannedLink[];
  /** Problems that make the request unserviceable by this agent (422); `links` is empty then. */
  readonly issues: readonly FieldIssue[];
}

/** `0.0.0.0` and `::` listen on every address, so any device address reaches them. */
function listensEverywhere(ip: string): boolean {
  return ip === '0.0.0.0' || ip === '::';
}

/**
 * Derives the desired links of a validated role request, or the issues that prevent it.
 * @example const { links, issues } = planLinks(request, agent.devices, 26000);
 */
export function planLinks(request: RoleRequest, devices: readonly LocalDevice[], linkBasePort: number): LinkPlan {
  const issues: FieldIssue[] = [];
  const byEndpoint = new Map(devices.map((d) => [d.endpoint, d]));
  const localIds = new Map(devices.map((d) => [d.clusterId, d]));
  const served = devices.map((d) => d.endpoint).join(', ');

  request.local.devices.forEach((spec, i) => {
    const path = `local.device[${i}]`;
    const device = byEndpoint.get(String(spec.logicalId));
    if (device === undefined) {
      issues.push({
        path: `${path}.device_logical_id`,
        message: `no link endpoint for device ${spec.logicalId} on this agent (it serves ${served})`,
      });
      return;
    }
    if (!listensEverywhere(device.ip) && clusterIdFor(spec.deviceIp, device.port) !== clusterIdFor(device.ip, device.port)) {
      issues.push({ path: `${path}.device_ip`, message: `is ${spec.deviceIp}, but device ${spec.logicalId} listens on ${device.ip}` });
    }
    if (device.port !== linkBasePort + spec.logicalId) {
      issues.push({
        path,
        message: `device ${spec.logicalId} listens on port ${device.port}, not link_base_port ${linkBasePort} + ${spec.logicalId}, where peers look for it`,
      });
    }
    const derived = clusterIdFor(device.ip, device.port);
    if (!listensEverywhere(device.ip) && device.clusterId !== derived) {
      issues.push({
        path,
        message: `device ${spec.logicalId} has the configured cluster_id ${device.clusterId}, not ${derived} derived from ${formatIpPort(device)}; peers derive cluster ids from addresses, so leave cluster_id unset`,
      });
    }
  });

  const links: PlannedLink[] = [];
  const seen = new Map<string, string>();
  request.peers.forEach((peer, p) => {
    peer.devices.forEach((spec, i) => {
      const path = `peers[${p}].device[${i}]`;
      const port = linkBasePort + spec.logicalId;
      if (port > 65535) {
        issues.push({
          path: `${path}.device_logical_id`,
          message: `link port ${linkBasePort} + ${spec.logicalId} = ${port} exceeds 65535`,
        });
        return;
      }
      const local = request.local.devices[i];
      if (local === undefined) return; // a device-count mismatch, reported by the body schema
      const remote = { ip: spec.deviceIp, port };
      const remoteClusterId = clusterIdFor(remote.ip, port);
      const own = localIds.get(remoteClusterId);
      if (own !== undefined) {
        issues.push({ path, message: `is this agent's own device ${own.endpoint} (${formatIpPort(remote)})` });
        return;
      }
      const endpoint = String(local.logicalId);
      const key = linkKey(endpoint, remoteClusterId);
      const earlier = seen.get(key);
      if (earlier !== undefined) {
        issues.push({ path, message: `asks for the same link as ${earlier} (local device ${endpoint} to ${formatIpPort(remote)})` });
        return;
      }
      seen.set(key, path);
      links.push({ key, target: peer.serverIp, device: i, endpoint, peerLogicalId: spec.logicalId, remote, remoteClusterId });
    });
  });
  return issues.length > 0 ? { links: [], issues } : { links, issues };
}
