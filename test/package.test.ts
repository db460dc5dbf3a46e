/**
 * What a user installs: the tarball `npm pack` builds (JavaScript and declarations under dist/, the
 * launcher, the native runtime's sources, the topology page already bundled, no test code), installed
 * into an empty folder as a gateway would install it; then the two gateway examples of examples/, on
 * Bun (`from 'pdlink'`) and on Deno (`from 'npm:pdlink'`), mount pdlink beside a route of their own
 * and proxy a completion to a prefill and a decode engine simulator.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { copyFileSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { refreshBody } from '../src/sim/cluster/cluster-bodies.ts';
import { SimCluster } from '../src/sim/cluster/cluster.ts';
import { until } from '../src/sim/cluster/process.ts';

const ROOT = join(import.meta.dir, '..');
const DENO = join(ROOT, 'node_modules', '.bin', 'deno');
const HONO_VERSION = (JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { dependencies: Record<string, string> })
  .dependencies['hono']!;

let scratch: string;
let app: string;
let tarball: string;
let files: string[];
let cluster: SimCluster;

function run(argv: string[], cwd: string): string {
  const proc = Bun.spawnSync(argv, { cwd, stdout: 'pipe', stderr: 'pipe', env: { ...process.env, npm_config_loglevel: 'error' } });
  if (proc.exitCode !== 0) throw new Error(`${argv.join(' ')} failed (${proc.exitCode}): ${proc.stderr.toString().slice(-2000)}`);
  return proc.stdout.toString();
}

beforeAll(async () => {
  scratch = mkdtempSync(join(tmpdir(), 'pdlink-package-'));
  // npm pack runs prepack, which builds dist/ and ui/dist/.
  const packed = JSON.parse(run(['npm', 'pack', '--json', '--pack-destination', scratch], ROOT)) as {
    filename: string;
    files: { path: string }[];
  }[];
  tarball = join(scratch, packed[0]!.filename);
  files = packed[0]!.files.map((f) => f.path);
  app = join(scratch, 'gateway');
  run(['mkdir', '-p', app], scratch);
  writeFileSync(join(app, 'package.json'), JSON.stringify({ name: 'a-gateway', private: true, type: 'module' }));
  run(['npm', 'install', '--no-audit', '--no-fund', tarball, `hono@${HONO_VERSION}`], app);
  copyFileSync(join(ROOT, 'examples', 'bun-gateway', 'gateway.ts'), join(app, 'bun-gateway.ts'));
  copyFileSync(join(ROOT, 'examples', 'deno-gateway', 'gateway.ts'), join(app, 'deno-gateway.ts'));
  cluster = await SimCluster.start({ prefill: 1, decode: 1 });
}, 300_000);

afterAll(async () => {
  await cluster?.stop();
  if (scratch !== undefined) rmSync(scratch, { recursive: true, force: true });
});

describe('the packed tarball', () => {
  test('holds the built modules with their declarations, the launcher, the native sources and the page; no sources or tests', () => {
    for (const needed of [
      'bin/pdlink',
      'dist/index.js',
      'dist/index.d.ts',
      'dist/main.js',
      'dist/workers/link-worker.js',
      'native/Makefile',
      'native/include/pdrt.h',
      'native/src/ctx.c',
      'scripts/build-native.mjs',
      'ui/dist/index.html',
      'ui/dist/app.js',
      'README.md',
      'package.json',
    ])
      expect(files).toContain(needed);
    expect(files.filter((f) => f.endsWith('.ts') && !f.endsWith('.d.ts'))).toEqual([]);
    expect(files.filter((f) => /^(src|test|bench|examples|native\/test|native\/build|native\/bench)\//.test(f))).toEqual([]);
  });

  test('installs into an empty folder: the native runtime is built and the pdlink command runs', () => {
    expect(existsSync(join(app, 'node_modules', 'pdlink', 'native', 'build', 'libpdrt.so'))).toBe(true);
    const usage = run([join(app, 'node_modules', '.bin', 'pdlink'), '--help'], app);
    expect(usage).toContain('Usage: pdlink <command>');
  });

  test('its plugin entry point and CLI are the package exports', () => {
    const pkg = JSON.parse(readFileSync(join(app, 'node_modules', 'pdlink', 'package.json'), 'utf8')) as {
      exports: Record<string, unknown>;
    };
    expect(pkg.exports['.']).toEqual({ types: './dist/index.d.ts', import: './dist/index.js' });
    expect(pkg.exports['./cli']).toEqual({ types: './dist/main.d.ts', import: './dist/main.js' });
  });
});

const GATEWAYS = {
  bun: () => [join(app, 'node_modules', '.bin', 'bun'), 'bun-gateway.ts'],
  deno: () => [DENO, 'run', '-A', 'deno-gateway.ts'],
} as const;

describe('a gateway that installed the package mounts pdlink', () => {
  for (const [runtime, argv] of Object.entries(GATEWAYS)) {
    test(`${runtime}: beside its own route, it takes the refresh and proxies a completion`, async () => {
      const child = Bun.spawn(argv(), { cwd: app, stdout: 'pipe', stderr: 'pipe', env: { ...process.env, PORT: '0', NO_COLOR: '1' } });
      try {
        const reader = child.stdout.getReader();
        let out = '';
        const port = await until(
          async () => {
            const chunk = await reader.read();
            if (chunk.done) throw new Error(`the ${runtime} gateway ended: ${await new Response(child.stderr).text()}`);
            out += new TextDecoder().decode(chunk.value);
            return /gateway listening on http:\/\/127\.0\.0\.1:(\d+)/.exec(out)?.[1];
          },
          60_000,
          () => `the ${runtime} gateway's listening line; it printed: ${out}`,
        );
        const base = `http://127.0.0.1:${port}`;

        expect(await fetch(`${base}/gateway/health`).then((r) => r.json())).toEqual({ gateway: 'ok', instances: 0 });

        const entries = cluster.engines.map((engine) => ({
          engine,
          inferencePort: Number(new URL(engine.inferenceUrl).port),
          managementPort: Number(new URL(engine.manageUrl).port),
        }));
        const refreshed = await fetch(`${base}/pd/v1/instances/refresh`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify(refreshBody(entries, cluster.model, cluster.settings)),
        });
        expect({ status: refreshed.status, body: await refreshed.text() }).toEqual({ status: 200, body: '' });
        expect(await fetch(`${base}/gateway/health`).then((r) => r.json())).toEqual({ gateway: 'ok', instances: 2 });

        const res = await fetch(`${base}/v1/completions`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', 'x-request-id': `package-${runtime}` },
          body: JSON.stringify({ model: cluster.model, prompt: `a ${runtime} gateway installed from npm`, max_tokens: 4 }),
        });
        const answer = (await res.json()) as { choices?: { text: string }[] };
        expect(res.status).toBe(200);
        expect(answer.choices?.[0]?.text.length).toBeGreaterThan(0);
        const served = [res.headers.get('x-pdlink-prefill'), res.headers.get('x-pdlink-decode')];
        expect(served).toEqual(cluster.engines.map((e) => String(e.id)));

        child.kill('SIGTERM');
        expect(await child.exited).toBe(0);
      } finally {
        child.kill('SIGKILL');
      }
    }, 120_000);
  }
});
