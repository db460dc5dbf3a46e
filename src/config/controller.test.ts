import { afterAll, describe, expect, test } from 'bun:test';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { timingLine } from '../controller/spec.ts';
import { loadTopology } from './controller.ts';

const dir = mkdtempSync(join(tmpdir(), 'pdlink-topology-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const write = (name: string, body: unknown): string => {
  const path = join(dir, name);
  writeFileSync(path, JSON.stringify(body));
  return path;
};

const instance = (id: number, ip: string, extra: Record<string, unknown> = {}) => ({
  id,
  manage_url: `http://${ip}:2000`,
  inference_url: `http://${ip}:3000`,
  model_name: 'm',
  server_ip: ip,
  ...extra,
});

describe('loadTopology', () => {
  test("defaults: pdlink's timings (0.2 s sync, 1 s heartbeat, 0.1 s polls), rates 0, static info of the seed example", () => {
    const { spec } = loadTopology(
      write('plain.json', {
        coordinators: ['http://127.0.0.1:1026/'],
        instances: [instance(1, '10.0.0.1', { devices: [{ device_logical_id: '0', device_ip: '10.1.0.1' }] })],
      }),
    );
    expect(spec.coordinators).toEqual(['http://127.0.0.1:1026']);
    // A dead instance leaves the snapshot about 1 s after it died: heartbeat 1 s, polls 0.1 s, pushes within 0.2 s.
    expect(spec.timing).toEqual({
      syncMs: 200,
      roleRetryMs: 5000,
      heartbeatTimeoutMs: 1000,
      statusPollMs: 100,
      httpTimeoutMs: 5000,
      drainTimeoutMs: 30_000,
    });
    expect(spec.timingDefaults).toBe('pdlink');
    expect(timingLine(spec)).toBe(
      "timings: pdlink's defaults (the file reads no ms_controller.json), the file's timing keys win: synchronization 0.2 s, " +
        'heartbeat timeout 1 s, status poll 0.1 s, role retry 5 s, HTTP timeout 5 s, drain timeout 30 s',
    );
    expect(spec.rates).toEqual({ p: 0, d: 0 });
    expect(spec.instances[0]!).toMatchObject({ role: undefined, staticInfo: { maxSeqLen: 2048, totalSlots: 200, blockSize: 128 } });
  });

  test('ms_controller.json timings and rates apply; the topology file wins over them', () => {
    write('ms_controller.json', {
      cluster_synchronization_seconds: 2,
      instance_heartbeat_timeout: 3,
      default_p_rate: 1,
      default_d_rate: 3,
      other_key: true,
    });
    const { spec } = loadTopology(
      write('with-ms.json', {
        coordinators: [],
        ms_controller: 'ms_controller.json',
        timing: { cluster_synchronization_seconds: 0.5 },
        default_d_rate: 2,
        instances: [],
      }),
    );
    expect(spec.timing).toMatchObject({ syncMs: 500, heartbeatTimeoutMs: 3000 });
    expect(spec.rates).toEqual({ p: 1, d: 2 });
  });

  test("with an ms_controller.json, the timings it leaves out are MindIE's (1 s sync, 5 s retry and heartbeat, 0.25 s polls)", () => {
    write('ms_rates_only.json', { default_p_rate: 1, default_d_rate: 1 });
    const { spec } = loadTopology(write('mindie.json', { coordinators: [], ms_controller: 'ms_rates_only.json', instances: [] }));
    expect(spec.timing).toEqual({
      syncMs: 1000,
      roleRetryMs: 5000,
      heartbeatTimeoutMs: 5000,
      statusPollMs: 250,
      httpTimeoutMs: 5000,
      drainTimeoutMs: 30_000,
    });
    expect(spec.timingDefaults).toBe('mindie');
    expect(timingLine(spec)).toStartWith("timings: MindIE's defaults (the file reads an ms_controller.json)");
  });

  test('the rank table gives each instance the devices of the server with its server_ip', () => {
    write('ranktable.json', {
      status: 'completed',
      server_list: [
        {
          server_id: 's0',
          server_ip: '10.0.0.1',
          device: [
            { device_id: '0', device_ip: '10.1.0.1', rank_id: '0' },
            { device_id: '1', device_ip: '10.1.0.2', rank_id: '1' },
          ],
        },
      ],
    });
    const { spec } = loadTopology(
      write('with-rank.json', { coordinators: [], rank_table: 'ranktable.json', instances: [instance(1, '10.0.0.1')] }),
    );
    expect(spec.instances[0]!.devices).toEqual([
      { logicalId: '0', ip: '10.1.0.1' },
      { logicalId: '1', ip: '10.1.0.2' },
    ]);
  });

  test('problems name the file and every field', () => {
    const path = write('bad.json', {
      coordinators: ['nope'],
      default_p_rate: 9,
      default_d_rate: 9,
      timing: { instance_heartbeat_timeout_seconds: 0.5 },
      instances: [instance(1, '10.0.0.1', { devices: [] }), instance(1, '10.0.0.1', { role: 'mixed' })],
    });
    let message = '';
    try {
      loadTopology(path);
    } catch (err) {
      message = (err as Error).message;
    }
    expect(message).toContain(path);
    for (const field of ['coordinators[0]', 'timing.instance_heartbeat_timeout_seconds', 'instances[0].devices', 'instances[1].role'])
      expect(message).toContain(field);
    // Cross-field checks run once the fields themselves are valid.
    const dup = write('dup.json', {
      coordinators: [],
      default_p_rate: 9,
      default_d_rate: 9,
      instances: [
        instance(1, '10.0.0.1', { devices: [{ device_logical_id: '0', device_ip: '10.1.0.1' }] }),
        instance(1, '10.0.0.1', { devices: [{ device_logical_id: '0', device_ip: '10.1.0.1' }] }),
      ],
    });
    expect(() => loadTopology(dup)).toThrow(
      /default_d_rate: default_p_rate \+ default_d_rate must be <= 16.*instances\[1\]\.id: duplicate id 1/,
    );
    expect(() => loadTopology(write('nodevices.json', { coordinators: [], instances: [instance(1, '10.0.0.7')] }))).toThrow(
      /instances\[0\]\.devices: is required/,
    );
  });

  /** The message of loading a file with `instances` (devices given), or '' when it loads. */
  const refusal = (name: string, instances: unknown[], extra: Record<string, unknown> = {}): string => {
    try {
      loadTopology(write(name, { coordinators: [], instances, ...extra }));
      return '';
    } catch (err) {
      return (err as Error).message;
    }
  };
  const dev = (ip: string, id = '0') => ({ device_logical_id: id, device_ip: ip });

  test('what an agent would refuse is refused in the file, with the field path: device counts, shared addresses and devices', () => {
    // Another device count: the agents pair devices by position.
    expect(
      refusal('count.json', [
        instance(1, '10.0.0.1', { devices: [dev('10.1.0.1')] }),
        instance(2, '10.0.0.2', { devices: [dev('10.1.0.2'), dev('10.1.0.2', '1')] }),
      ]),
    ).toContain("instances[1].devices: has 2 devices, the cluster's instances 1 (as instances[0])");
    // The same server_ip spelt two ways is one server.
    expect(
      refusal('ip.json', [
        instance(1, '10.0.0.1', { server_ip: '::1', devices: [dev('10.1.0.1')] }),
        instance(2, '10.0.0.2', { server_ip: '0:0:0:0:0:0:0:1', devices: [dev('10.1.0.2')] }),
      ]),
    ).toContain("instances[1].server_ip: server_ip 0:0:0:0:0:0:0:1 is already instances[0]'s (written ::1 there)");
    // One agent, one engine, one device: each belongs to one instance.
    const shared = refusal('shared.json', [
      instance(1, '10.0.0.1', { devices: [dev('10.1.0.1')] }),
      instance(2, '10.0.0.2', {
        manage_url: 'http://10.0.0.1:2000/',
        inference_url: 'HTTP://10.0.0.1:3000',
        devices: [dev('10.1.0.1', '00')],
      }),
    ]);
    for (const expected of [
      "instances[1].manage_url: manage_url http://10.0.0.1:2000 is already instances[0]'s;",
      "instances[1].inference_url: inference_url HTTP://10.0.0.1:3000 is already instances[0]'s (written http://10.0.0.1:3000 there)",
      "instances[1].devices[0]: device 10.1.0.1 #00 is already instances[0]'s (written 10.1.0.1 #0 there)",
    ])
      expect(shared).toContain(expected);
    expect(refusal('twice.json', [instance(1, '10.0.0.1', { devices: [dev('10.1.0.1'), dev('10.1.0.1')] })])).toContain(
      'instances[0].devices[1]: duplicates devices[0] (same device_ip and device_logical_id)',
    );
    // Devices from the rank table count as well.
    write('rank2.json', {
      server_list: [
        {
          server_ip: '10.0.0.1',
          device: [
            { device_id: '0', device_ip: '10.1.0.1' },
            { device_id: '1', device_ip: '10.1.0.2' },
          ],
        },
      ],
    });
    expect(
      refusal('ranked.json', [instance(1, '10.0.0.1'), instance(2, '10.0.0.2', { devices: [dev('10.1.0.3')] })], {
        rank_table: 'rank2.json',
      }),
    ).toContain('instances[1].devices: has 1 device,');
    // Distinct addresses and devices of one count load.
    expect(
      refusal('fine.json', [
        instance(1, '10.0.0.1', { devices: [dev('10.1.0.1')] }),
        instance(2, '10.0.0.2', { devices: [dev('10.1.0.1', '1')] }),
      ]),
    ).toBe('');
  });

  test('an id of 2^53 is too large (not "not a number"), a bad URL is one issue, an unknown key is named plainly', () => {
    const message = refusal('ids.json', [
      instance(9007199254740992, '10.0.0.1', { devices: [dev('10.1.0.1')], inference_url: 'nope', colour: 'red' }),
    ]);
    expect(message).toContain('instances[0].id: must be at most 2^53-1 (9007199254740991): larger ids cannot be carried exactly');
    expect(message.split('instances[0].inference_url').length - 1).toBe(1);
    expect(message).toContain('instances[0].inference_url: must be an http(s) URL');
    expect(message).toContain('instances[0].colour: is not a known key here (misspelt, or in the wrong place)');
    expect(message).not.toContain('Expected never');
  });

  test('max_removed_fraction: 0.5 unless the file says, within [0, 1]', () => {
    expect(loadTopology(write('guard-default.json', { coordinators: [], instances: [] })).spec.maxRemovedFraction).toBeUndefined();
    expect(loadTopology(write('guard.json', { coordinators: [], max_removed_fraction: 1, instances: [] })).spec.maxRemovedFraction).toBe(1);
    expect(refusal('guard-bad.json', [], { max_removed_fraction: 1.5 })).toContain('max_removed_fraction: must be <= 1');
  });
});
