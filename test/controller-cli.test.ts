import { afterAll, describe, expect, test } from 'bun:test';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runPdlink, startPdlink } from './support/child.ts';

const dir = mkdtempSync(join(tmpdir(), 'pdlink-controller-cli-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('pdlink controller as a child process', () => {
  test('--help lists the options and exits 0; no topology file exits 2', async () => {
    const help = await runPdlink(['controller', '--help']);
    expect(help.code).toBe(0);
    for (const option of ['--config', '--manage_ip', '--manage_port']) expect(help.stdout).toContain(option);
    const missing = await runPdlink(['controller']);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toContain('--config');
  });

  test('a bad topology file exits 2 naming the file and the field', async () => {
    const path = join(dir, 'bad.json');
    writeFileSync(path, JSON.stringify({ coordinators: [], instances: [{ id: -1 }] }));
    const { code, stderr } = await runPdlink(['controller', '--config', path]);
    expect(code).toBe(2);
    expect(stderr).toContain(path);
    expect(stderr).toContain('instances[0].id');
    expect(stderr).toContain('instances[0].manage_url: is required');
  });

  test('prints its listening line, serves probes, /metrics and /v1/cluster, exits 0 on SIGTERM', async () => {
    const path = join(dir, 'empty.json');
    writeFileSync(path, JSON.stringify({ coordinators: [], instances: [] }));
    const child = await startPdlink(['controller', '--config', path, '--manage_port', '0'], { listeners: ['controller'], cwd: dir });
    try {
      const url = child.urls.controller!;
      expect(url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
      expect((await fetch(`${url}/v1/readiness`)).status).toBe(200);
      expect(await (await fetch(`${url}/metrics`)).text()).toContain('pdlink_controller_role_posts_total');
      const cluster = (await (await fetch(`${url}/v1/cluster`)).json()) as {
        instances: unknown[];
        desired: { timing: Record<string, number>; timing_defaults: string };
      };
      expect(cluster.instances).toEqual([]);
      // pdlink's own file without ms_controller: the timings that take a dead instance out in about 1 s, and it says so.
      expect(cluster.desired.timing_defaults).toBe('pdlink');
      expect(cluster.desired.timing).toMatchObject({
        cluster_synchronization_seconds: 0.2,
        instance_heartbeat_timeout_seconds: 1,
        status_poll_seconds: 0.1,
      });
      expect(child.output()).toContain("pdlink controller: timings: pdlink's defaults (the file reads no ms_controller.json)");
    } finally {
      expect(await child.kill('SIGTERM')).toBe(0);
    }
  });
});
