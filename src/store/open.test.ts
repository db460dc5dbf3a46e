import { describe, expect, test } from 'bun:test';
import { join } from 'node:path';
import { MemoryStore } from './memory.ts';
import { openStore } from './open.ts';

const ROOT = join(import.meta.dir, '..', '..');

/** Files of the etcd3 package loaded by a fresh process after it imports `entry`. */
function etcdFilesLoadedBy(entry: string): number {
  const script = `await import(${JSON.stringify(entry)}); console.log(Object.keys(require.cache).filter((k) => k.includes('/node_modules/etcd3/')).length);`;
  const run = Bun.spawnSync([process.execPath, '-e', script], { cwd: ROOT, stderr: 'pipe' });
  if (run.exitCode !== 0) throw new Error(`import failed: ${run.stderr.toString()}`);
  return Number(run.stdout.toString().trim());
}

describe('openStore', () => {
  test('without endpoints the store is in memory', async () => {
    const store = await openStore(undefined);
    expect(store).toBeInstanceOf(MemoryStore);
    expect(store.kind).toBe('memory');
  });

  test('the Coordinator and the controller do not load the etcd client until etcd is named', () => {
    // Loaded up front it holds about 17 MiB of RSS in every process (bench/results/rss.md).
    expect(etcdFilesLoadedBy('./src/cli/coordinator.ts')).toBe(0);
    expect(etcdFilesLoadedBy('./src/cli/controller.ts')).toBe(0);
    // The probe itself sees the client when it is loaded.
    expect(etcdFilesLoadedBy('./src/store/etcd.ts')).toBeGreaterThan(0);
  });
});
