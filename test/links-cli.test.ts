/**
 * `pdlink instance` as a command: help, argument and configuration errors (exit 2 with the
 * field named), a link port already taken, and a clean SIGTERM stop.
 */
import { afterAll, describe, expect, test } from 'bun:test';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runPdlink } from './support/child.ts';
import { startBlackhole, startInstance } from './fixtures/links/harness.ts';

const TEST_TIMEOUT_MS = 30_000;
const dir = mkdtempSync(join(tmpdir(), 'pdlink-instance-cli-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('pdlink instance', () => {
  test(
    '--help prints the options and exits 0',
    async () => {
      const { code, stdout } = await runPdlink(['instance', '--help']);
      expect(code).toBe(0);
      expect(stdout).toContain('--manage_port');
      expect(stdout).toContain('link_base_port');
    },
    TEST_TIMEOUT_MS,
  );

  test(
    'bad arguments and configurations exit 2 naming the problem',
    async () => {
      const bad = join(dir, 'bad.json');
      writeFileSync(bad, JSON.stringify({ pdlink: { devices: [{ device_logical_id: 0, device_ip: 'nope' }] } }));
      const cases: [string[], string][] = [
        [['instance', '--manage_port', 'x'], '--manage_port'],
        [['instance', '--manage_ip', 'host'], '--manage_ip'],
        [['instance', '--bogus'], 'bogus'],
        [['instance', '--config', bad], 'pdlink.devices[0].device_ip'],
        [['instance', '--config', join(dir, 'missing.json')], 'cannot read'],
      ];
      for (const [args, message] of cases) {
        const { code, stderr } = await runPdlink(args);
        expect(code).toBe(2);
        expect(stderr).toContain(message);
      }
    },
    TEST_TIMEOUT_MS,
  );

  test(
    'a link port already in use exits 2 naming the endpoint and address',
    async () => {
      const taken = await startBlackhole('127.0.0.6');
      try {
        const config = join(dir, 'taken.json');
        writeFileSync(
          config,
          JSON.stringify({ pdlink: { link_base_port: taken.port, devices: [{ device_logical_id: 0, device_ip: '127.0.0.6' }] } }),
        );
        const { code, stderr } = await runPdlink(['instance', '--config', config, '--manage_port', '0']);
        expect(code).toBe(2);
        expect(stderr).toContain(`cannot open link endpoint 0 on 127.0.0.6:${taken.port}`);
      } finally {
        await taken.close();
      }
    },
    TEST_TIMEOUT_MS,
  );

  test(
    'prints the device lines and stops cleanly on SIGTERM',
    async () => {
      const instance = await startInstance('127.0.0.7');
      expect(instance.child.urls['link-0']).toBe(`127.0.0.7:${instance.linkPort}`);
      expect(instance.clusterId).toBe(0x7f000007n * 65536n + BigInt(instance.linkPort));
      expect((await fetch(`${instance.url}/v2/health/live`)).status).toBe(200);
      expect(await instance.child.kill('SIGTERM')).toBe(0);
    },
    TEST_TIMEOUT_MS,
  );
});
