import { describe, expect, test } from 'bun:test';
import * as v from 'valibot';
import { toFieldIssues } from './issues.ts';
import { isRole, RoleBody, toRoleRequest } from './role.ts';

/** The API's own example, placeholders replaced by loopback addresses. */
function seedExample() {
  return {
    local: {
      server_ip: '127.0.0.4',
      device: [
        { device_ip: '127.0.0.4', device_logical_id: '0' },
        { device_ip: '127.0.0.4', device_logical_id: '1' },
      ],
    },
    peers: [
      {
        server_ip: '127.0.0.8',
        device: [
          { device_ip: '127.0.0.8', device_logical_id: '0' },
          { device_ip: '127.0.0.8', device_logical_id: '0' },
        ],
      },
    ],
  };
}

function issuesOf(body: unknown) {
  const result = v.safeParse(RoleBody, body, { abortEarly: false });
  return result.success ? [] : toFieldIssues(result.issues);
}

function expectIssue(body: unknown, path: string, fragment: string): void {
  const issues = issuesOf(body);
  const match = issues.find((i) => i.path === path);
  expect(match, `expected an issue at ${path}, got ${JSON.stringify(issues)}`).toBeDefined();
  expect(match!.message).toContain(fragment);
}

describe('role body', () => {
  test('the seed example passes, its repeated peer logical id included', () => {
    expect(issuesOf(seedExample())).toEqual([]);
    const request = toRoleRequest('prefill', v.parse(RoleBody, seedExample()));
    expect(request.local).toEqual({
      serverIp: '127.0.0.4',
      devices: [
        { logicalId: 0, deviceIp: '127.0.0.4' },
        { logicalId: 1, deviceIp: '127.0.0.4' },
      ],
    });
    expect(request.peers[0]!.devices.map((d) => d.logicalId)).toEqual([0, 0]);
  });

  test('peers are optional, unknown fields accepted', () => {
    const body = { ...seedExample(), peers: undefined, extra: 1 };
    expect(issuesOf(body)).toEqual([]);
    expect(toRoleRequest('decode', v.parse(RoleBody, body)).peers).toEqual([]);
  });

  test('local missing or server_ip missing / not an IP', () => {
    expectIssue({ peers: [] }, 'local', 'is required');
    const noIp = seedExample() as Record<string, any>;
    delete noIp.local.server_ip;
    expectIssue(noIp, 'local.server_ip', 'is required');
    const badIp = seedExample();
    badIp.local.server_ip = 'xxx.xxx.xxx.xxx';
    expectIssue(badIp, 'local.server_ip', 'IPv4 or IPv6');
  });

  test('local.device missing or empty', () => {
    const missing = seedExample() as Record<string, any>;
    delete missing.local.device;
    expectIssue(missing, 'local.device', 'is required');
    const empty = seedExample();
    empty.local.device = [];
    expectIssue(empty, 'local.device', 'at least one device');
  });

  test('device_logical_id not an integer string', () => {
    for (const bad of ['a', '-1', '1.5', '', 0]) {
      const body = seedExample() as Record<string, any>;
      body.local.device[1].device_logical_id = bad;
      expectIssue(body, 'local.device[1].device_logical_id', 'integer string');
    }
  });

  test('device_ip not an IP, in local and in peers', () => {
    const local = seedExample();
    local.local.device[0]!.device_ip = 'xxx.xxx.xxx.xxx';
    expectIssue(local, 'local.device[0].device_ip', 'IPv4 or IPv6');
    const peer = seedExample();
    peer.peers[0]!.device[1]!.device_ip = '10.0.0';
    expectIssue(peer, 'peers[0].device[1].device_ip', 'IPv4 or IPv6');
  });

  test('duplicate logical ids in local.device', () => {
    const body = seedExample();
    body.local.device[1]!.device_logical_id = '0';
    expectIssue(body, 'local.device[1].device_logical_id', 'duplicate');
  });

  test('logical ids are integers: "0" and "00" are one device', () => {
    const body = seedExample();
    body.local.device[1]!.device_logical_id = '00';
    expectIssue(body, 'local.device[1].device_logical_id', 'duplicate device_logical_id 00 (also local.device[0])');
    const padded = seedExample();
    padded.local.device[1]!.device_logical_id = '0000000000001';
    expect(issuesOf(padded)).toEqual([]);
    expect(toRoleRequest('decode', v.parse(RoleBody, padded)).local.devices.map((d) => d.logicalId)).toEqual([0, 1]);
    const huge = seedExample();
    huge.local.device[1]!.device_logical_id = '1000000000';
    expectIssue(huge, 'local.device[1].device_logical_id', 'integer string');
  });

  test('a peer without server_ip is valid (Table 2: optional) and keeps no name', () => {
    const body = seedExample() as Record<string, any>;
    delete body.peers[0].server_ip;
    expect(issuesOf(body)).toEqual([]);
    const request = toRoleRequest('prefill', v.parse(RoleBody, body));
    expect(request.peers[0]!.serverIp).toBeUndefined();
    expect(request.peers[0]!.devices.map((d) => d.deviceIp)).toEqual(['127.0.0.8', '127.0.0.8']);
    const badIp = seedExample();
    badIp.peers[0]!.server_ip = 'nope';
    expectIssue(badIp, 'peers[0].server_ip', 'IPv4 or IPv6');
  });

  test('a peer on the same server and device addresses but other logical ids is another node', () => {
    const body = seedExample();
    body.peers = [
      {
        server_ip: body.local.server_ip,
        device: [
          { device_ip: '127.0.0.4', device_logical_id: '2' },
          { device_ip: '127.0.0.4', device_logical_id: '3' },
        ],
      },
    ];
    expect(issuesOf(body)).toEqual([]);
    // The same devices spelled with leading zeros are the local node, and so is an unnamed peer with them.
    const self = seedExample() as Record<string, any>;
    self.peers = [{ device: self.local.device.map((d: any) => ({ ...d, device_logical_id: `0${d.device_logical_id}` })) }];
    expectIssue(self, 'peers[0]', 'local node itself');
  });

  test('a peer repeated with leading zeros in its logical ids is a duplicate', () => {
    const body = seedExample();
    const again = structuredClone(body.peers[0]!);
    again.device[0]!.device_logical_id = '000';
    body.peers.push(again);
    expectIssue(body, 'peers[1]', 'duplicates peers[0]');
  });

  test('a peer whose device count differs from the local count', () => {
    const body = seedExample();
    body.peers[0]!.device.pop();
    expectIssue(body, 'peers[0].device', 'has 1 devices, the local node has 2');
  });

  test('a peer equal to the local node, and a repeated peer', () => {
    const self = seedExample();
    self.peers = [structuredClone(self.local)];
    expectIssue(self, 'peers[0]', 'local node itself');
    const twice = seedExample();
    twice.peers.push(structuredClone(twice.peers[0]!));
    expectIssue(twice, 'peers[1]', 'duplicates peers[0]');
  });

  test('several problems are reported together', () => {
    const body = seedExample();
    body.local.server_ip = 'nope';
    body.peers[0]!.device.pop();
    const paths = issuesOf(body).map((i) => i.path);
    expect(paths).toContain('local.server_ip');
  });

  test('roles', () => {
    expect(isRole('prefill')).toBe(true);
    expect(isRole('decode')).toBe(true);
    expect(isRole('flex')).toBe(false);
    expect(isRole('Prefill')).toBe(false);
  });
});
