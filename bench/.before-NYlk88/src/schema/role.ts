/**
 * Schema of `POST /v1/role/{role}` (MindIE instance API): the role in the URL and the body with the
 * local node's devices and the peers to link with. Body problems are 422 (off-spec), not 400.
 */
import * as v from 'valibot';

export const ROLES = ['prefill', 'decode'] as const;
export type Role = (typeof ROLES)[number];

/** Most devices one node may declare; Ascend servers carry 8 or 16 NPUs. */
export const MAX_DEVICES = 64;
/** Most peers one role request may name. */
export const MAX_PEERS = 4096;

const Ip = v.pipe(v.string('must be a string'), v.ip('must be an IPv4 or IPv6 address'));

const Device = v.looseObject({
  device_logical_id: v.pipe(v.string('must be an integer string'), v.regex(/^0*\d{1,9}$/, 'must be an integer string, e.g. "0"')),
  device_ip: Ip,
});

const devices = v.pipe(
  v.array(Device, 'must be an array of devices'),
  v.minLength(1, 'must list at least one device'),
  v.maxLength(MAX_DEVICES, `must list at most ${MAX_DEVICES} devices`),
);

const Node = v.looseObject({ server_ip: Ip, device: devices });

/** Table 2 makes a peer's `server_ip` optional: its devices, not its name, say where to link. */
const Peer = v.looseObject({ server_ip: v.optional(Ip), device: devices });

type DeviceOutput = v.InferOutput<typeof Device>;
type PeerOutput = v.InferOutput<typeof Peer>;

/**
 * Logical ids are integer strings, so "0" and "00" name one device; every comparison goes
 * through this.
 * @example logicalId({ device_logical_id: '007', device_ip: '::1' }) // 7
 */
function logicalId(device: DeviceOutput): number {
  return Number(device.device_logical_id);
}

/**
 * Two nodes are the same when they name the same devices (address and logical id) in the same
 * order; a node on one server may hold some of its devices and another node the rest, so equal
 * addresses alone prove nothing. A peer without `server_ip` is compared by its devices only.
 */
function sameNode(a: PeerOutput, b: PeerOutput): boolean {
  if (a.server_ip !== undefined && b.server_ip !== undefined && a.server_ip !== b.server_ip) return false;
  return (
    a.device.length === b.device.length &&
    a.device.every((d, i) => d.device_ip === b.device[i]!.device_ip && logicalId(d) === logicalId(b.device[i]!))
  );
}

export const RoleBody = v.pipe(
  v.looseObject({
    local: Node,
    peers: v.optional(v.pipe(v.array(Peer, 'must be an array of peers'), v.maxLength(MAX_PEERS, `must list at most ${MAX_PEERS} peers`))),
  }),
  v.rawCheck(({ dataset, addIssue }) => {
    if (!dataset.typed) return;
    const { local, peers = [] } = dataset.value;
    const seenIds = new Map<number, number>();
    local.device.forEach((d, i) => {
      const first = seenIds.get(logicalId(d));
      if (first !== undefined) {
        addIssue({
          message: `duplicate device_logical_id ${d.device_logical_id} (also local.device[${first}])`,
          path: [
            { type: 'object', origin: 'value', input: dataset.value, key: 'local', value: local },
            { type: 'object', origin: 'value', input: local, key: 'device', value: local.device },
            { type: 'array', origin: 'value', input: local.device, key: i, value: d },
            { type: 'object', origin: 'value', input: d, key: 'device_logical_id', value: d.device_logical_id },
          ],
        });
      } else seenIds.set(logicalId(d), i);
    });
    peers.forEach((peer, i) => {
      const peerPath = [
        { type: 'object', origin: 'value', input: dataset.value, key: 'peers', value: peers },
        { type: 'array', origin: 'value', input: peers, key: i, value: peer },
      ] as const;
      if (peer.device.length !== local.device.length) {
        addIssue({
          message: `has ${peer.device.length} devices, the local node has ${local.device.length}; they pair by position and must be as many`,
          path: [...peerPath, { type: 'object', origin: 'value', input: peer, key: 'device', value: peer.device }],
        });
      }
      if (sameNode(peer, local)) {
        addIssue({ message: 'is the local node itself', path: [...peerPath] });
      }
      const earlier = peers.findIndex((other, j) => j < i && sameNode(other, peer));
      if (earlier !== -1) addIssue({ message: `duplicates peers[${earlier}]`, path: [...peerPath] });
    });
  }),
);

export type RoleBody = v.InferOutput<typeof RoleBody>;

/** A device of a node, inside pdlink. */
export interface DeviceSpec {
  readonly logicalId: number;
  readonly deviceIp: string;
}

/** A node (local or peer), inside pdlink. */
export interface NodeSpec {
  readonly serverIp: string;
  readonly devices: readonly DeviceSpec[];
}

/** A peer, inside pdlink; `serverIp` is absent when the request did not name one. */
export interface PeerSpec {
  readonly serverIp: string | undefined;
  readonly devices: readonly DeviceSpec[];
}

export interface RoleRequest {
  readonly role: Role;
  readonly local: NodeSpec;
  readonly peers: readonly PeerSpec[];
}

/**
 * Maps a validated body to pdlink's internal names.
 * @example toRoleRequest('decode', v.parse(RoleBody, body))
 */
export function toRoleRequest(role: Role, body: RoleBody): RoleRequest {
  const devicesOf = (n: PeerOutput): DeviceSpec[] => n.device.map((d) => ({ logicalId: logicalId(d), deviceIp: d.device_ip }));
  return {
    role,
    local: { serverIp: body.local.server_ip, devices: devicesOf(body.local) },
    peers: (body.peers ?? []).map((peer) => ({ serverIp: peer.server_ip, devices: devicesOf(peer) })),
  };
}

export function isRole(value: string): value is Role {
  return (ROLES as readonly string[]).includes(value);
}
