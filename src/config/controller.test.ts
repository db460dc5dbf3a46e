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
      /default_d_rate: default_p_rate \+ default_d_rate must be <= 16.*instances\[1\]\.id: duplicate id 1.*instances\[1\]\.server_ip: duplicate server_ip/,
    );
    expect(() => loadTopology(write('nodevices.json', { coordinators: [], instances: [instance(1, '10.0.0.7')] }))).toThrow(
      /instances\[0\]\.devices: is required/,
    );
  });
});
