#!/usr/bin/env node
/**
 * The HA tests run a real etcd (Debian's `etcd-server`). This makes sure the `etcd` binary is
 * there: nothing to do when it is; as root it installs the package with apt (quietly, once);
 * otherwise it fails saying exactly what to install. Run by `npm test`'s pretest and by the test
 * helper that starts etcd, so a fresh machine needs no other step.
 */
import { execFileSync, spawnSync } from 'node:child_process';

function hasEtcd() {
  return spawnSync('sh', ['-c', 'command -v etcd'], { stdio: 'ignore' }).status === 0;
}

if (!hasEtcd()) {
  const message = 'etcd is missing: install it with `apt-get install -y etcd-server` (Debian package etcd-server, binary etcd)';
  if (typeof process.getuid !== 'function' || process.getuid() !== 0) {
    console.error(`${message}; run as root to let the tests install it`);
    process.exit(1);
  }
  try {
    execFileSync('apt-get', ['update', '-qq'], { stdio: ['ignore', 'ignore', 'inherit'] });
    execFileSync('apt-get', ['install', '-y', '-qq', '--no-install-recommends', 'etcd-server'], {
      stdio: ['ignore', 'ignore', 'inherit'],
      env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' },
    });
  } catch (err) {
    console.error(`${message}; apt-get failed: ${err instanceof Error ? err.message : String(err)}`);
    process.exit(1);
  }
  if (!hasEtcd()) {
    console.error(`${message}; apt-get ran but no etcd binary is on PATH`);
    process.exit(1);
  }
}
