/**
 * What bin/pdlink sets before it hands over to Bun, which reads these variables only when it
 * starts: a copy of the launcher beside a stand-in for Bun that prints what it was given.
 */
import { afterAll, expect, test } from 'bun:test';
import { chmodSync, copyFileSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { COORDINATOR_HEAP_RAM_BYTES } from '../src/sim/cluster-spawn.ts';

const root = mkdtempSync(join(tmpdir(), 'pdlink-launcher-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));
mkdirSync(join(root, 'bin'));
mkdirSync(join(root, 'node_modules', '.bin'), { recursive: true });
copyFileSync(join(import.meta.dir, '..', 'bin', 'pdlink'), join(root, 'bin', 'pdlink'));
const fakeBun = join(root, 'node_modules', '.bin', 'bun');
writeFileSync(fakeBun, '#!/bin/sh\necho "ram=${BUN_JSC_forceRAMSize:-unset} max=${BUN_CONFIG_MAX_HTTP_REQUESTS:-unset} args=$*"\n');
chmodSync(fakeBun, 0o755);
chmodSync(join(root, 'bin', 'pdlink'), 0o755);

function launch(args: string[], env: Record<string, string> = {}): string {
  const base = Object.fromEntries(
    Object.entries(process.env).filter(([k]) => k !== 'BUN_JSC_forceRAMSize' && k !== 'BUN_CONFIG_MAX_HTTP_REQUESTS'),
  );
  const run = Bun.spawnSync([join(root, 'bin', 'pdlink'), ...args], { env: { ...base, ...env } as Record<string, string> });
  expect(run.exitCode).toBe(0);
  return run.stdout.toString().trim();
}

test('the Coordinator starts with its heap sized for 512 MiB; the caller may choose another size, 0 for the runtime default', () => {
  expect(launch(['coordinator', '--manage_port', '0'])).toBe(
    `ram=${COORDINATOR_HEAP_RAM_BYTES} max=65535 args=${join(root, 'src', 'main.ts')} coordinator --manage_port 0`,
  );
  expect(launch(['coordinator'], { BUN_JSC_forceRAMSize: '0' })).toStartWith('ram=0 ');
  expect(launch(['coordinator'], { BUN_JSC_forceRAMSize: '1073741824' })).toStartWith('ram=1073741824 ');
});

test('other commands keep the runtime heap sizing', () => {
  expect(launch(['instance', '--config', 'x.json'])).toStartWith('ram=unset max=65535 ');
  expect(launch(['controller'])).toStartWith('ram=unset ');
});
