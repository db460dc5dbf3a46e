import { afterAll, describe, expect, test } from 'bun:test';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runPdlink, startPdlink } from './support/child.ts';
import { until } from './support/sim-cluster.ts';

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

  test('a broken or gutting topology change is refused: logged, shown in GET /v1/cluster, the cluster kept; forced once through the API', async () => {
    const path = join(dir, 'watched.json');
    const entry = (id: number, ip: string) => ({
      id,
      manage_url: `http://${ip}:1`,
      inference_url: `http://${ip}:2`,
      model_name: 'm',
      server_ip: ip,
      devices: [{ device_logical_id: '0', device_ip: ip }],
    });
    const write = (body: unknown) => writeFileSync(path, typeof body === 'string' ? body : JSON.stringify(body));
    write({ coordinators: [], instances: [entry(1, '127.0.77.1'), entry(2, '127.0.77.2')] });
    const child = await startPdlink(['controller', '--config', path, '--manage_port', '0'], { listeners: ['controller'], cwd: dir });
    const url = child.urls.controller!;
    type View = { instances: { id: number; state: string }[]; topology_file: { outcome: string; message: string; read_at: string } };
    const view = async (): Promise<View> => (await (await fetch(`${url}/v1/cluster`)).json()) as View;
    const fileSays = (pattern: RegExp) =>
      until(
        async () => {
          const file = (await view()).topology_file;
          return pattern.test(file.message) ? file : undefined;
        },
        20_000,
        () => `topology_file never matched ${pattern}: ${child.output()}`,
      );
    try {
      expect((await view()).topology_file).toMatchObject({ outcome: 'applied', message: 'read at start: 2 instances' });
      write('{"coordinators": [], "instances": [');
      expect(await fileSays(/not valid JSON/)).toMatchObject({ outcome: 'refused' });
      expect(child.output()).toContain(
        `pdlink controller: topology change ignored: not applied, the running topology is kept: config file ${path}: not valid JSON`,
      );
      write({ coordinators: [], instances: [] });
      expect(await fileSays(/removes 2 of 2 instances/)).toMatchObject({ outcome: 'refused' });
      expect(child.output()).toContain('pdlink controller: topology change refused: it removes 2 of 2 instances (100%)');
      expect((await view()).instances.map((i) => i.id)).toEqual([1, 2]);
      const forced = await fetch(`${url}/v1/cluster/reload?force=true`, { method: 'POST' });
      expect(forced.status).toBe(200);
      expect(await forced.json()).toMatchObject({ outcome: 'applied', message: 'applied: draining 1, 2' });
      // Never reached, nothing to wait for: they are drained at once.
      await until(
        async () => ((await view()).instances.length === 0 ? true : undefined),
        20_000,
        () => 'instances 1 and 2 still listed',
      );
    } finally {
      expect(await child.kill('SIGTERM')).toBe(0);
    }
  });
});
