/**
 * nginx (Debian's package) as the native floor of the proxy CPU benchmark: one worker process in
 * the foreground, relaying to the same fake engines over keep-alive upstream connections with
 * buffering off (SSE goes through as it comes), access log off. One listener relays to P, another
 * to D, so a client that calls P then D through it has nginx do the two hops of a PD request.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { until } from '../src/sim/cluster/process.ts';

export interface Nginx {
  readonly pid: number;
  /** nginx in front of P, and in front of D. */
  readonly pUrl: string;
  readonly dUrl: string;
  stop(): Promise<void>;
}

/** Installs nginx when missing (scripts/ensure-nginx.mjs); returns its path, or undefined when it cannot be had. */
export function ensureNginx(): string | undefined {
  const script = join(import.meta.dir, '..', 'scripts', 'ensure-nginx.mjs');
  const result = spawnSync('node', [script], { stdio: ['ignore', 'inherit', 'inherit'] });
  if (result.status !== 0) return undefined;
  return Bun.which('nginx') ?? Bun.which('nginx', { PATH: '/usr/sbin:/usr/local/sbin' }) ?? undefined;
}

function config(dir: string, pPort: number, dPort: number, pUpstream: string, dUpstream: string): string {
  const server = (port: number, upstream: string) => `
    server {
      listen 127.0.0.1:${port} reuseport;
      location / {
        proxy_pass http://${upstream};
        proxy_http_version 1.1;
        proxy_set_header Connection "";
        proxy_buffering off;
        proxy_request_buffering off;
      }
    }`;
  return `
daemon off;
master_process off;
worker_processes 1;
pid ${join(dir, 'nginx.pid')};
error_log ${join(dir, 'error.log')} warn;
events { worker_connections 4096; }
http {
  access_log off;
  client_body_temp_path ${join(dir, 'body')};
  proxy_temp_path ${join(dir, 'proxy')};
  fastcgi_temp_path ${join(dir, 'fastcgi')};
  uwsgi_temp_path ${join(dir, 'uwsgi')};
  scgi_temp_path ${join(dir, 'scgi')};
  keepalive_requests 1000000;
  upstream p { server ${pUpstream}; keepalive 64; keepalive_requests 1000000; }
  upstream d { server ${dUpstream}; keepalive 64; keepalive_requests 1000000; }
  ${server(pPort, 'p')}
  ${server(dPort, 'd')}
}
`;
}

async function freePort(): Promise<number> {
  const server = Bun.serve({ hostname: '127.0.0.1', port: 0, fetch: () => new Response() });
  const port = server.port!;
  await server.stop(true);
  return port;
}

/**
 * Starts nginx in front of the engines at `pEngine` and `dEngine` (URLs), pinned with `cpus` (a
 * taskset list) when given.
 * @example const nginx = await startNginx(path, engines.p, engines.d, '1');
 */
export async function startNginx(binary: string, pEngine: string, dEngine: string, cpus?: string): Promise<Nginx> {
  const dir = mkdtempSync(join(tmpdir(), 'pdlink-nginx-'));
  const [pPort, dPort] = [await freePort(), await freePort()];
  const conf = join(dir, 'nginx.conf');
  writeFileSync(conf, config(dir, pPort, dPort, new URL(pEngine).host, new URL(dEngine).host));
  const command = [binary, '-p', dir, '-c', conf];
  const child: ChildProcess = spawn(
    cpus === undefined ? command[0]! : 'taskset',
    cpus === undefined ? command.slice(1) : ['-c', cpus, ...command],
    {
      stdio: ['ignore', 'ignore', 'pipe'],
    },
  );
  let err = '';
  child.stderr!.on('data', (chunk: Buffer) => (err += chunk.toString()));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const pUrl = `http://127.0.0.1:${pPort}`;
  const dUrl = `http://127.0.0.1:${dPort}`;
  await until(
    async () => {
      if (child.exitCode !== null) throw new Error(`nginx exited: ${err}`);
      const res = await fetch(`${dUrl}/ready`, { method: 'POST', body: '{}' }).catch(() => undefined);
      if (res === undefined) return undefined;
      await res.arrayBuffer();
      return true;
    },
    10_000,
    () => `nginx did not answer: ${err}`,
  );
  return {
    pid: child.pid!,
    pUrl,
    dUrl,
    stop: async () => {
      child.kill('SIGTERM');
      await exited;
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
