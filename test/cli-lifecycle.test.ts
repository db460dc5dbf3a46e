/**
 * Process start and stop of every pdlink command: a signal sent the moment the listening lines
 * appear always ends in exit 0; a listener that cannot bind exits 2 naming it with no listening
 * line printed; every spelling of "all interfaces" is refused unless the file allows it; the
 * instance agent's default management address does not collide with a Coordinator on defaults.
 */
import { afterAll, describe, expect, test } from 'bun:test';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runPdlink, startPdlink } from './support/child.ts';

const dir = mkdtempSync(join(tmpdir(), 'pdlink-lifecycle-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

let configs = 0;
/** An instance config on a fresh 127.A.B.C address with a random link base port. */
function instanceConfig(extra: Record<string, unknown> = {}, ip = randomLoopback()): { path: string; ip: string; linkPort: number } {
  const linkPort = 20_000 + Math.floor(Math.random() * 40_000);
  const path = join(dir, `instance-${configs++}.json`);
  writeFileSync(
    path,
    JSON.stringify({ ...extra, pdlink: { devices: [{ device_logical_id: 0, device_ip: ip }], link_base_port: linkPort } }),
  );
  return { path, ip, linkPort };
}

function randomLoopback(): string {
  return `127.${100 + Math.floor(Math.random() * 100)}.${Math.floor(Math.random() * 256)}.${2 + Math.floor(Math.random() * 250)}`;
}

type Starter = () => Promise<{ args: string[]; listeners: string[] }>;

const STARTERS: Record<string, Starter> = {
  coordinator: async () => ({
    args: ['coordinator', '--manage_ip', randomLoopback(), '--manage_port', '0', '--predict_port', '0'],
    listeners: ['management', 'inference'],
  }),
  instance: async () => {
    const { path, ip } = instanceConfig();
    return { args: ['instance', '--config', path, '--manage_ip', ip, '--manage_port', '0'], listeners: ['management', 'link-0'] };
  },
  'sim-engine': async () => {
    const { path, ip } = instanceConfig();
    return {
      args: ['sim-engine', '--role', 'prefill', '--config', path, '--manage_ip', ip, '--manage_port', '0', '--ip', ip, '--port', '0'],
      listeners: ['management', 'inference', 'link-0'],
    };
  },
};

describe('signals right after start', () => {
  // 16 starts: every command, both signals, the signal sent as soon as the last line is read.
  const rounds: [string, NodeJS.Signals][] = [];
  for (let i = 0; i < 8; i++) rounds.push(['coordinator', i % 2 === 0 ? 'SIGTERM' : 'SIGINT']);
  for (let i = 0; i < 4; i++) rounds.push(['instance', i % 2 === 0 ? 'SIGTERM' : 'SIGINT']);
  for (let i = 0; i < 4; i++) rounds.push(['sim-engine', i % 2 === 0 ? 'SIGINT' : 'SIGTERM']);
  test.each(rounds.map(([command, signal], i) => [i, command, signal] as const))(
    'round %d: %s exits 0 on %s sent the moment it listens',
    async (_round, command, signal) => {
      const { args, listeners } = await STARTERS[command]!();
      const child = await startPdlink(args, { listeners, cwd: dir });
      child.process.kill(signal);
      const code = await child.exited;
      expect({ code, output: code === 0 ? '' : child.output() }).toEqual({ code: 0, output: '' });
    },
  );
});

describe('a listener that cannot bind', () => {
  test('instance: a management port held by a coordinator exits 2 naming it, with no listening line', async () => {
    const coordinatorIp = randomLoopback();
    const coordinator = await startPdlink(['coordinator', '--manage_ip', coordinatorIp, '--manage_port', '0', '--predict_port', '0'], {
      listeners: ['management', 'inference'],
      cwd: dir,
    });
    try {
      const taken = new URL(coordinator.urls['management']!).port;
      // The device link port is free: the instance's first listener binds, its second collides.
      const { path } = instanceConfig();
      const { code, stdout, stderr } = await runPdlink(
        ['instance', '--config', path, '--manage_ip', coordinatorIp, '--manage_port', taken],
        {
          cwd: dir,
        },
      );
      expect(code).toBe(2);
      expect(stdout).not.toContain('listening');
      expect(stderr).toContain(`cannot listen for management on http://${coordinatorIp}:${taken}`);
    } finally {
      expect(await coordinator.kill('SIGTERM')).toBe(0);
    }
  });

  test('sim-engine: an inference port in use exits 2 naming it, with no listening line', async () => {
    const blocker = Bun.serve({ hostname: '127.0.0.1', port: 0, fetch: () => new Response('') });
    try {
      const { path, ip } = instanceConfig();
      const { code, stdout, stderr } = await runPdlink(
        [
          'sim-engine',
          '--role',
          'decode',
          '--config',
          path,
          '--manage_ip',
          ip,
          '--manage_port',
          '0',
          '--ip',
          '127.0.0.1',
          '--port',
          String(blocker.port),
        ],
        { cwd: dir },
      );
      expect(code).toBe(2);
      expect(stdout).not.toContain('listening');
      expect(stderr).toContain(`cannot listen for inference on http://127.0.0.1:${blocker.port}`);
    } finally {
      blocker.stop(true);
    }
  });

  test('instance: a device link port in use exits 2 naming it, with no listening line', async () => {
    const blocker = Bun.listen({ hostname: '127.0.0.1', port: 0, socket: { data() {} } });
    try {
      const path = join(dir, 'link-taken.json');
      writeFileSync(
        path,
        JSON.stringify({ pdlink: { devices: [{ device_logical_id: 0, device_ip: '127.0.0.1' }], link_base_port: blocker.port } }),
      );
      const { code, stdout, stderr } = await runPdlink(
        ['instance', '--config', path, '--manage_ip', randomLoopback(), '--manage_port', '0'],
        {
          cwd: dir,
        },
      );
      expect(code).toBe(2);
      expect(stdout).not.toContain('listening');
      expect(stderr).toContain(`127.0.0.1:${blocker.port}`);
    } finally {
      blocker.stop(true);
    }
  });
});

describe('the all-interfaces guard', () => {
  const SPELLINGS = ['::ffff:0.0.0.0', '::', '0:0:0:0:0:0:0:0', '::ffff:0:0', '::0'];

  test('coordinator: every spelling in the file is refused unless allowed', async () => {
    for (const [i, ip] of SPELLINGS.entries()) {
      const path = join(dir, `zero-${i}.json`);
      writeFileSync(path, JSON.stringify({ http_config: { predict_ip: ip } }));
      const { code, stderr } = await runPdlink(['coordinator', '--config', path, '--manage_port', '0', '--predict_port', '0'], {
        cwd: dir,
      });
      expect({ ip, code }).toEqual({ ip, code: 2 });
      expect(stderr).toContain('predict_ip');
      expect(stderr).toContain('allow_all_zero_ip_listening');
    }
    const cli = await runPdlink(['coordinator', '--manage_ip', '::ffff:0.0.0.0', '--manage_port', '0', '--predict_port', '0'], {
      cwd: dir,
    });
    expect(cli.code).toBe(2);
    expect(cli.stderr).toContain('manage_ip');
  });

  test('instance: the management address and a device link address are refused unless allowed', async () => {
    const manage = await runPdlink(['instance', '--config', instanceConfig().path, '--manage_ip', '::ffff:0.0.0.0', '--manage_port', '0'], {
      cwd: dir,
    });
    expect(manage.code).toBe(2);
    expect(manage.stderr).toContain('management address');
    expect(manage.stderr).toContain('ServerConfig.allowAllZeroIpListening');

    const device = await runPdlink(
      ['instance', '--config', instanceConfig({}, '0:0:0:0:0:0:0:0').path, '--manage_ip', randomLoopback(), '--manage_port', '0'],
      {
        cwd: dir,
      },
    );
    expect(device.code).toBe(2);
    expect(device.stderr).toContain('pdlink.devices[0].device_ip');
    expect(device.stdout).not.toContain('listening');

    const env = await runPdlink(['instance', '--config', instanceConfig().path, '--manage_port', '0'], {
      cwd: dir,
      env: { MIES_CONTAINER_MANAGEMENT_IP: '::' },
    });
    expect(env.code).toBe(2);
    expect(env.stderr).toContain('management address');
  });

  test('instance: allowed by ServerConfig.allowAllZeroIpListening, the agent listens', async () => {
    const { path } = instanceConfig({ ServerConfig: { allowAllZeroIpListening: true } });
    const child = await startPdlink(['instance', '--config', path, '--manage_ip', '::ffff:0.0.0.0', '--manage_port', '0'], {
      listeners: ['management'],
      cwd: dir,
    });
    expect(await child.kill('SIGTERM')).toBe(0);
  });

  test('sim-engine: the inference address is refused unless allowed', async () => {
    const { path, ip } = instanceConfig();
    const { code, stdout, stderr } = await runPdlink(
      ['sim-engine', '--role', 'prefill', '--config', path, '--manage_ip', ip, '--manage_port', '0', '--ip', '::ffff:0:0', '--port', '0'],
      { cwd: dir },
    );
    expect(code).toBe(2);
    expect(stderr).toContain('inference address');
    expect(stdout).not.toContain('listening');
  });
});

describe('pdlink sim-cluster options', () => {
  test('an all-interfaces address, one address for both engines or an unknown option exits 2 naming it', async () => {
    const zero = await runPdlink(['sim-cluster', '--decode_ip', '::ffff:0.0.0.0'], { cwd: dir });
    expect(zero.code).toBe(2);
    expect(zero.stderr).toContain('--decode_ip');
    expect(zero.stderr).toContain('every interface');
    const same = await runPdlink(['sim-cluster', '--prefill_ip', '127.0.0.21', '--decode_ip', '127.0.0.21'], { cwd: dir });
    expect(same.code).toBe(2);
    expect(same.stderr).toContain('--decode_ip');
    const unknown = await runPdlink(['sim-cluster', '--bogus'], { cwd: dir });
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toContain('--bogus');
    expect(`${zero.stdout}${same.stdout}${unknown.stdout}`).not.toContain('listening');
  });
});

describe('default addresses', () => {
  test("the instance agent's management listener defaults to 127.0.0.2 (MindIE's managementIpAddress), beside a coordinator's 127.0.0.1", async () => {
    // The coordinator on its default address; the agent on the same port with no address given,
    // as `npm start` and `pdlink instance` on their defaults (both port 1026) would be.
    const coordinator = await startPdlink(['coordinator', '--manage_port', '0', '--predict_port', '0'], {
      listeners: ['management', 'inference'],
      cwd: dir,
    });
    try {
      const port = new URL(coordinator.urls['management']!).port;
      expect(coordinator.urls['management']).toBe(`http://127.0.0.1:${port}`);
      const { path } = instanceConfig();
      const agent = await startPdlink(['instance', '--config', path, '--manage_port', port], { listeners: ['management'], cwd: dir });
      try {
        expect(agent.urls['management']).toBe(`http://127.0.0.2:${port}`);
        expect((await fetch(`http://127.0.0.2:${port}/v1/status`)).status).toBe(200);
        expect((await fetch(`http://127.0.0.1:${port}/v1/readiness`)).status).toBe(503);
      } finally {
        expect(await agent.kill('SIGTERM')).toBe(0);
      }
    } finally {
      expect(await coordinator.kill('SIGTERM')).toBe(0);
    }
  });
});
