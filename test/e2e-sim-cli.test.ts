/**
 * `pdlink sim-engine` as a process: its help names it a simulator, bad options exit 2 with the
 * option named, and a started engine prints its listening lines, answers on both listeners and
 * stops cleanly on SIGTERM.
 */
import { describe, expect, test } from 'bun:test';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { spawnListening } from '../src/sim/cluster/process.ts';
import { REPO_ROOT } from './support/child.ts';
import { unusedLinkPort } from './support/link-port.ts';

const ENTRY = join(REPO_ROOT, 'src', 'cli', 'sim-engine.ts');

async function run(args: string[]) {
  const proc = Bun.spawn([process.execPath, ENTRY, ...args], { stdout: 'pipe', stderr: 'pipe' });
  const [stdout, stderr, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited]);
  return { stdout, stderr, code };
}

describe('pdlink sim-engine', () => {
  test('--help says what it is', async () => {
    const { stdout, code } = await run(['--help']);
    expect(code).toBe(0);
    expect(stdout).toContain('Engine simulator (not an inference engine)');
    expect(stdout).toContain('--decode_ms_per_token');
  });

  test('a bad option exits 2 naming it', async () => {
    const { stderr, code } = await run(['--role', 'encode']);
    expect(code).toBe(2);
    expect(stderr).toContain('pdlink sim-engine: --role: must be prefill or decode, got "encode"');
  });

  test('serves both listeners and stops on SIGTERM', async () => {
    const ip = `127.${100 + Math.floor(Math.random() * 100)}.${Math.floor(Math.random() * 256)}.9`;
    const dir = mkdtempSync(join(tmpdir(), 'pdlink-sim-cli-'));
    const config = join(dir, 'engine.json');
    writeFileSync(
      config,
      JSON.stringify({
        pdlink: { devices: [{ device_logical_id: 0, device_ip: ip }], link_base_port: await unusedLinkPort(ip) },
      }),
    );
    const engine = await spawnListening({
      name: 'engine',
      command: [
        process.execPath,
        ENTRY,
        '--role',
        'prefill',
        '--model',
        'cli-sim',
        '--config',
        config,
        '--manage_ip',
        ip,
        '--manage_port',
        '0',
        '--ip',
        ip,
        '--port',
        '0',
        '--decode_ms_per_token',
        '0',
      ],
      listeners: ['management', 'inference'],
    });
    try {
      expect(engine.output()).toContain('pdlink: sim-engine (simulator) role prefill model cli-sim');
      expect(engine.output()).toMatch(/^pdlink: link-0 cluster_id \d+$/m);
      const models = (await (await fetch(`${engine.urls['inference']}/v1/models`)).json()) as { data: { id: string }[] };
      expect(models.data[0]!.id).toBe('cli-sim');
      const res = await fetch(`${engine.urls['inference']}/v1/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'cli-sim', prompt: 'hello', max_tokens: 2 }),
      });
      expect(res.status).toBe(200);
      const status = (await (await fetch(`${engine.urls['management']}/sim/status`)).json()) as {
        requests: { local: number };
        kv: { blocks_total: number };
      };
      expect(status.requests.local).toBe(1);
      expect(status.kv.blocks_total).toBe(1024);
      // The agent's own routes are on the same listener.
      expect((await fetch(`${engine.urls['management']}/v1/status`)).status).toBe(200);
      expect((await fetch(`${engine.urls['management']}/sim/nope`)).status).toBe(404);
    } finally {
      const code = await engine.stop('SIGTERM');
      rmSync(dir, { recursive: true, force: true });
      expect(code).toBe(0);
    }
  });
});
