#!/usr/bin/env node
/**
 * The proxy CPU benchmark measures pdlink against nginx (Debian's `nginx`) as the floor of a
 * native proxy. nginx is a benchmark floor only, never a test dependency: this makes sure the
 * `nginx` binary is there when the benchmark runs. Nothing to do when it is; as root it installs
 * the package with apt (quietly, once); otherwise it fails saying exactly what to install.
 */
import { execFileSync, spawnSync } from 'node:child_process';

function hasNginx() {
  return spawnSync('sh', ['-c', 'command -v nginx || test -x /usr/sbin/nginx'], { stdio: 'ignore' }).status === 0;
}

if (!hasNginx()) {
  const message = 'nginx is missing: install it with `apt-get install -y nginx` (Debian package nginx)';
  if (typeof process.getuid !== 'function' || process.getuid() !== 0) {
    console.error(`${message}; run as root to let the benchmark install it`);
    process.exit(1);
  }
  try {
    execFileSync('apt-get', ['update', '-qq'], { stdio: ['ignore', 'ignore', 'inherit'] });
    execFileSync('apt-get', ['install', '-y', '-qq', '--no-install-recommends', 'nginx'], {
      stdio: ['ignore', 'ignore', 'inherit'],
      env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' },
    });
  } catch (err) {
    console.error(`${message}; apt-get failed: ${err instanceof Error ? err.message : String(err)}`);
    process.exit(1);
  }
  if (!hasNginx()) {
    console.error(`${message}; apt-get ran but no nginx binary was found`);
    process.exit(1);
  }
}
