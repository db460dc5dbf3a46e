import { afterAll, describe, expect, test } from 'bun:test';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { resolveInstanceSettings } from './instance.ts';

const dir = mkdtempSync(join(tmpdir(), 'pdlink-instance-config-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
let n = 0;
function file(content: unknown): string {
  const path = join(dir, `config-${n++}.json`);
  writeFileSync(path, typeof content === 'string' ? content : JSON.stringify(content));
  return path;
}

describe('resolveInstanceSettings', () => {
  test("defaults: management on 127.0.0.2:1026 (MindIE's managementIpAddress), one device 0 on 127.0.0.1:26000", () => {
    const s = resolveInstanceSettings({}, {});
    expect(s.manage).toEqual({ ip: '127.0.0.2', port: 1026 });
    expect(s.devices).toEqual([{ endpoint: '0', logicalId: 0, ip: '127.0.0.1', port: 26000, clusterId: 0x7f000001n * 65536n + 26000n }]);
  });

  test('every listener address meaning all interfaces is refused unless ServerConfig.allowAllZeroIpListening', () => {
    expect(() => resolveInstanceSettings({ manageIp: '::ffff:0.0.0.0' }, {})).toThrow('ServerConfig.allowAllZeroIpListening');
    expect(() => resolveInstanceSettings({}, { MIES_CONTAINER_MANAGEMENT_IP: '0:0:0:0:0:0:0:0' })).toThrow('management address');
    const managementFromFile = file({ ServerConfig: { managementIpAddress: '::' } });
    expect(() => resolveInstanceSettings({ config: managementFromFile }, {})).toThrow('management address');
    const device = file({ pdlink: { devices: [{ device_logical_id: 0, device_ip: '0.0.0.0' }] } });
    expect(() => resolveInstanceSettings({ config: device, manageIp: '127.0.0.9' }, {})).toThrow('pdlink.devices[0].device_ip');
    const defaultDevice = file({ ServerConfig: { ipAddress: '::ffff:0:0', managementIpAddress: '127.0.0.9' } });
    expect(() => resolveInstanceSettings({ config: defaultDevice }, {})).toThrow('pdlink.devices[0].device_ip');
    const allowed = file({ ServerConfig: { ipAddress: '::', allowAllZeroIpListening: true } });
    const s = resolveInstanceSettings({ config: allowed }, {});
    expect(s.manage.ip).toBe('::');
    expect(s.devices[0]?.ip).toBe('::');
    expect(s.allowAllZeroIp).toBe(true);
    expect(() => resolveInstanceSettings({ config: file({ ServerConfig: { allowAllZeroIpListening: 'yes' } }) }, {})).toThrow(
      'ServerConfig.allowAllZeroIpListening',
    );
  });

  test('management address: CLI, then env, then managementIpAddress, then ipAddress; port: CLI, managementPort, port', () => {
    const config = file({ ServerConfig: { ipAddress: '127.0.0.5', managementIpAddress: '127.0.0.6', port: 2000, managementPort: 2001 } });
    expect(resolveInstanceSettings({ config }, {}).manage).toEqual({ ip: '127.0.0.6', port: 2001 });
    expect(resolveInstanceSettings({ config }, { MIES_CONTAINER_MANAGEMENT_IP: '127.0.0.7' }).manage.ip).toBe('127.0.0.7');
    expect(
      resolveInstanceSettings({ config, manageIp: '127.0.0.8', managePort: 0 }, { MIES_CONTAINER_MANAGEMENT_IP: '127.0.0.7' }).manage,
    ).toEqual({ ip: '127.0.0.8', port: 0 });
    const portOnly = file({ ServerConfig: { ipAddress: '127.0.0.5', port: 2000 } });
    expect(resolveInstanceSettings({ config: portOnly }, {}).manage).toEqual({ ip: '127.0.0.5', port: 2000 });
    expect(resolveInstanceSettings({ config: portOnly }, {}).devices[0]?.ip).toBe('127.0.0.5');
    expect(() => resolveInstanceSettings({}, { MIES_CONTAINER_MANAGEMENT_IP: 'nope' })).toThrow('MIES_CONTAINER_MANAGEMENT_IP');
  });

  test('devices: link port = base + logical id, computed or explicit cluster ids, pool tuning', () => {
    const config = file({
      pdlink: {
        link_base_port: 27000,
        devices: [
          { device_logical_id: '1', device_ip: '127.0.0.2' },
          { device_logical_id: 3, device_ip: '::1', cluster_id: '18446744073709551615' },
        ],
        pool: { threads: 2, batch_window_ms: 0, max_batch: 8, encoding: 'shared', link_threads: 'workers' },
      },
    });
    const s = resolveInstanceSettings({ config }, {});
    expect(s.devices.map((d) => [d.endpoint, d.ip, d.port, d.clusterId])).toEqual([
      ['1', '127.0.0.2', 27001, 0x7f000002n * 65536n + 27001n],
      ['3', '::1', 27003, 18446744073709551615n],
    ]);
    expect(s.pool).toEqual({ threads: 2, batchWindowMs: 0, maxBatch: 8, encoding: 'shared', linkThreads: 'workers' });
    expect(resolveInstanceSettings({ config: file({ pdlink: { cluster_id: 5 } }) }, {}).devices[0]?.clusterId).toBe(5n);
  });

  test('transfers: pdlink.transfers tunes the transfer pool and the same-host path', () => {
    expect(resolveInstanceSettings({}, {}).transfers).toEqual({});
    const s = resolveInstanceSettings(
      { config: file({ pdlink: { transfers: { threads: 3, same_host_fastpath: false, chunk_mib: 8, parallel_slices: 1 } } }) },
      {},
    );
    expect(s.transfers).toEqual({ threads: 3, sameHostFastpath: false, chunkBytes: 8 * 1024 * 1024, parallelSlices: 1 });
  });

  test('link port security: the secret from pdlink.auth.link_secret_file or PDLINK_LINK_SECRET_FILE (env first), caps from pdlink.link_port', () => {
    expect(resolveInstanceSettings({}, {}).security).toEqual({ linkPort: {} });
    const secret = file('0123456789abcdef-secret\n');
    const other = file('fedcba9876543210-other');
    const config = file({ pdlink: { auth: { link_secret_file: secret }, link_port: { idle_timeout_ms: 30000, max_conns_per_peer: 8 } } });
    const s = resolveInstanceSettings({ config }, {});
    expect(new TextDecoder().decode(s.security.linkSecret)).toBe('0123456789abcdef-secret');
    expect(s.security.linkPort).toEqual({ idleTimeoutMs: 30000, maxConnsPerPeer: 8 });
    const fromEnv = resolveInstanceSettings({ config }, { PDLINK_LINK_SECRET_FILE: other }).security.linkSecret;
    expect(new TextDecoder().decode(fromEnv)).toBe('fedcba9876543210-other');
    expect(() => resolveInstanceSettings({ config: file({ pdlink: { link_port: { max_links: 0 } } }) }, {})).toThrow(
      'pdlink.link_port.max_links',
    );
    expect(() => resolveInstanceSettings({ config: file({ pdlink: { auth: { link_secret_file: join(dir, 'none') } } }) }, {})).toThrow(
      'pdlink.auth.link_secret_file: cannot read',
    );
  });

  test('bad configurations name the file, the key and the reason', () => {
    const cases: [unknown, string][] = [
      [{ pdlink: { transfers: { same_host_fastpath: 'no' } } }, 'pdlink.transfers.same_host_fastpath'],
      [{ pdlink: { transfers: { chunk_mib: 0 } } }, 'pdlink.transfers.chunk_mib'],
      [{ ServerConfig: { port: 80 } }, 'ServerConfig.port'],
      [{ ServerConfig: { ipAddress: 'host' } }, 'ServerConfig.ipAddress'],
      [{ pdlink: { devices: [] } }, 'pdlink.devices'],
      [{ pdlink: { devices: [{ device_logical_id: -1, device_ip: '127.0.0.1' }] } }, 'pdlink.devices[0].device_logical_id'],
      [
        {
          pdlink: {
            devices: [
              { device_logical_id: 0, device_ip: '127.0.0.1' },
              { device_logical_id: 0, device_ip: '127.0.0.2' },
            ],
          },
        },
        'duplicate 0',
      ],
      [
        {
          pdlink: {
            cluster_id: 1,
            devices: [
              { device_logical_id: 0, device_ip: '127.0.0.1' },
              { device_logical_id: 1, device_ip: '127.0.0.1' },
            ],
          },
        },
        'pdlink.cluster_id',
      ],
      [{ pdlink: { link_base_port: 65535, devices: [{ device_logical_id: 1, device_ip: '127.0.0.1' }] } }, 'exceeds 65535'],
      [{ pdlink: { pool: { encoding: 'json' } } }, 'pdlink.pool.encoding'],
      [{ pdlink: { pool: { link_threads: 'fibers' } } }, 'pdlink.pool.link_threads'],
      ['{', 'not valid JSON'],
      ['', 'size must be'],
    ];
    for (const [content, message] of cases) {
      const config = file(content);
      expect(() => resolveInstanceSettings({ config }, {})).toThrow(message);
    }
    expect(() => resolveInstanceSettings({ config: join(dir, 'missing.json') }, {})).toThrow('cannot read');
  });
});
