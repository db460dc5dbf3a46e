import { describe, expect, test } from 'bun:test';
import { clusterIdFor } from '../../links/endpoint.ts';
import { BASE, LOCAL_DEVICES, LOCAL_IP, peer, request } from '../../../test/fixtures/role/controller.ts';
import { linkKey } from '../../links/key.ts';
import { planLinks } from './plan.ts';

const issuesOf = (...args: Parameters<typeof planLinks>) => planLinks(...args).issues.map((i) => `${i.path}: ${i.message}`);

describe('planLinks', () => {
  test('device i of each peer pairs with local device i; endpoint base + logical id, cluster id from that address', () => {
    const { links, issues } = planLinks(request('decode', [peer('127.0.0.10', [4, 5]), peer('::1', [0, 0])]), LOCAL_DEVICES, BASE);
    expect(issues).toEqual([]);
    expect(links.map((l) => [l.target, l.device, l.endpoint, l.peerLogicalId, l.remote, l.remoteClusterId])).toEqual([
      ['127.0.0.10', 0, '0', 4, { ip: '127.0.0.10', port: BASE + 4 }, clusterIdFor('127.0.0.10', BASE + 4)],
      ['127.0.0.10', 1, '1', 5, { ip: '127.0.0.10', port: BASE + 5 }, clusterIdFor('127.0.0.10', BASE + 5)],
      ['::1', 0, '0', 0, { ip: '::1', port: BASE }, clusterIdFor('::1', BASE)],
      ['::1', 1, '1', 0, { ip: '::1', port: BASE }, clusterIdFor('::1', BASE)],
    ]);
    expect(links[0]!.key).toBe(linkKey('0', clusterIdFor('127.0.0.10', BASE + 4)));
  });

  test('local devices pair by their position in local.device, whatever their logical ids', () => {
    const swapped = {
      ...request('decode', [peer('127.0.0.10')]),
      local: { serverIp: LOCAL_IP, devices: [1, 0].map((logicalId) => ({ logicalId, deviceIp: LOCAL_IP })) },
    };
    expect(planLinks(swapped, LOCAL_DEVICES, BASE).links.map((l) => [l.device, l.endpoint, l.peerLogicalId])).toEqual([
      [0, '1', 0],
      [1, '0', 1],
    ]);
  });

  test('a local device without a context on this agent', () => {
    const body = {
      ...request('decode', []),
      local: {
        serverIp: LOCAL_IP,
        devices: [
          { logicalId: 0, deviceIp: LOCAL_IP },
          { logicalId: 7, deviceIp: LOCAL_IP },
        ],
      },
    };
    expect(issuesOf(body, LOCAL_DEVICES, BASE)).toEqual([
      'local.device[1].device_logical_id: no link endpoint for device 7 on this agent (it serves 0, 1)',
    ]);
  });

  test('a local device whose address differs from the one its context listens on', () => {
    const body = { ...request('decode', []), local: { serverIp: LOCAL_IP, devices: [{ logicalId: 0, deviceIp: '127.0.0.9' }] } };
    expect(issuesOf(body, LOCAL_DEVICES, BASE)).toEqual([`local.device[0].device_ip: is 127.0.0.9, but device 0 listens on ${LOCAL_IP}`]);
    // A context on the unspecified address listens on every address.
    const anywhere = [{ endpoint: '0', ip: '0.0.0.0', port: BASE, clusterId: 5n }];
    expect(issuesOf(body, anywhere, BASE)).toEqual([]);
  });

  test('a local device with a configured cluster id that peers could not derive', () => {
    const devices = [{ ...LOCAL_DEVICES[0]!, clusterId: 42n }, LOCAL_DEVICES[1]!];
    expect(issuesOf(request('prefill', []), devices, BASE)).toEqual([
      `local.device[0]: device 0 has the configured cluster_id 42, not ${clusterIdFor(LOCAL_IP, BASE)} derived from ${LOCAL_IP}:${BASE}; peers derive cluster ids from addresses, so leave cluster_id unset`,
    ]);
  });

  test('a local device that does not listen on link_base_port + its logical id', () => {
    expect(issuesOf(request('prefill', []), LOCAL_DEVICES, BASE + 10)).toEqual([
      `local.device[0]: device 0 listens on port ${BASE}, not link_base_port ${BASE + 10} + 0, where peers look for it`,
      `local.device[1]: device 1 listens on port ${BASE + 1}, not link_base_port ${BASE + 10} + 1, where peers look for it`,
    ]);
  });

  test('a peer logical id whose link port would exceed 65535', () => {
    expect(issuesOf(request('decode', [peer('127.0.0.10', [0, 39536])]), LOCAL_DEVICES, BASE)).toEqual([
      'peers[0].device[1].device_logical_id: link port 26000 + 39536 = 65536 exceeds 65535',
    ]);
  });

  test("a peer device that is one of this agent's own devices", () => {
    expect(issuesOf(request('decode', [peer(LOCAL_IP, [1, 2])]), LOCAL_DEVICES, BASE)).toEqual([
      `peers[0].device[0]: is this agent's own device 1 (${LOCAL_IP}:${BASE + 1})`,
    ]);
  });

  test('two peers asking for the same link', () => {
    const a = peer('127.0.0.10');
    const b = {
      serverIp: '127.0.0.11',
      devices: [
        { logicalId: 3, deviceIp: '127.0.0.11' },
        { logicalId: 1, deviceIp: '127.0.0.10' },
      ],
    };
    expect(issuesOf(request('decode', [a, b]), LOCAL_DEVICES, BASE)).toEqual([
      'peers[1].device[1]: asks for the same link as peers[0].device[1] (local device 1 to 127.0.0.10:26001)',
    ]);
  });

  test('all problems are reported together and no links are planned', () => {
    const body = {
      ...request('decode', [peer('127.0.0.10', [0, 99999])]),
      local: {
        serverIp: LOCAL_IP,
        devices: [
          { logicalId: 9, deviceIp: LOCAL_IP },
          { logicalId: 1, deviceIp: LOCAL_IP },
        ],
      },
    };
    const plan = planLinks(body, LOCAL_DEVICES, BASE);
    expect(plan.issues.map((i) => i.path)).toEqual(['local.device[0].device_logical_id', 'peers[0].device[1].device_logical_id']);
    expect(plan.links).toEqual([]);
  });
});
