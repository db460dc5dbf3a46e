import { afterAll, describe, expect, test } from 'bun:test';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { REPO_ROOT, runPdlink, startPdlink } from './support/child.ts';

const seedBody = readFileSync(join(REPO_ROOT, 'test', 'fixtures', 'seed-refresh.json'), 'utf8');
const dir = mkdtempSync(join(tmpdir(), 'pdlink-cli-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('pdlink coordinator as a child process', () => {
  test('listens on free ports, accepts the seed example over HTTP, stops cleanly on SIGTERM', async () => {
    const child = await startPdlink(['coordinator', '--manage_port', '0', '--predict_port', '0'], {
      listeners: ['management', 'inference'],
      cwd: dir,
    });
    try {
      const management = child.urls.management!;
      expect(management).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
      expect(child.urls.inference).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
      expect((await fetch(`${management}/v1/readiness`)).status).toBe(503);

      const res = await fetch(`${management}/v1/instances/refresh`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: seedBody,
      });
      expect(res.status).toBe(200);
      expect(await res.text()).toBe('');

      const instances = (await (await fetch(`${management}/v1/instances`)).json()) as { instances: { id: number }[] };
      expect(instances.instances.map((i) => i.id).sort()).toEqual([0, 1]);
      expect((await fetch(`${management}/v1/readiness`)).status).toBe(200);
      expect((await fetch(`${management}/v2/health/live`)).status).toBe(200);
      const metrics = await (await fetch(`${management}/metrics`)).text();
      expect(metrics).toContain('pdlink_refresh_total');
    } finally {
      expect(await child.kill('SIGTERM')).toBe(0);
    }
  });

  test('--help prints the options and exits 0', async () => {
    const { code, stdout } = await runPdlink(['coordinator', '--help']);
    expect(code).toBe(0);
    for (const option of ['--config', '--manage_ip', '--manage_port', '--predict_ip', '--predict_port']) expect(stdout).toContain(option);
  });

  test('a bad configuration file exits with status 2 naming the key', async () => {
    const path = join(dir, 'bad.json');
    writeFileSync(path, JSON.stringify({ http_config: { manage_port: '80' } }));
    const { code, stderr } = await runPdlink(['coordinator', '--config', path]);
    expect(code).toBe(2);
    expect(stderr).toContain('http_config.manage_port');
    expect(stderr).toContain('[1024, 65535]');
  });

  test('the config path is taken from MINDIE_MS_COORDINATOR_CONFIG_FILE_PATH', async () => {
    const path = join(dir, 'zero.json');
    writeFileSync(path, JSON.stringify({ http_config: { manage_ip: '0.0.0.0' } }));
    const { code, stderr } = await runPdlink(['coordinator'], { env: { MINDIE_MS_COORDINATOR_CONFIG_FILE_PATH: path }, cwd: dir });
    expect(code).toBe(2);
    expect(stderr).toContain('allow_all_zero_ip_listening');
  });

  test('bad arguments exit with status 2 naming the option', async () => {
    const port = await runPdlink(['coordinator', '--manage_port', '1023']);
    expect(port.code).toBe(2);
    expect(port.stderr).toContain('--manage_port');
    const ip = await runPdlink(['coordinator', '--predict_ip', 'localhost:1']);
    expect(ip.code).toBe(2);
    expect(ip.stderr).toContain('--predict_ip');
    const unknown = await runPdlink(['coordinator', '--bogus']);
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toContain('--bogus');
    const command = await runPdlink(['frobnicate']);
    expect(command.code).toBe(2);
    expect(command.stderr).toContain('unknown command');
  });

  test('a port already in use exits with status 2 naming the listener', async () => {
    const blocker = Bun.serve({ hostname: '127.0.0.1', port: 0, fetch: () => new Response('') });
    try {
      const { code, stderr } = await runPdlink(['coordinator', '--manage_port', String(blocker.port), '--predict_port', '0']);
      expect(code).toBe(2);
      expect(stderr).toContain('management');
    } finally {
      blocker.stop(true);
    }
  });
});
