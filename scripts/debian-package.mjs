/**
 * What the ensure-* scripts share: a Debian package whose binary a test or benchmark needs is put
 * on the machine when missing. Nothing to do when the binary is there; as root the package is
 * installed with apt (quietly, once); otherwise the process fails saying exactly what to install.
 */
import { execFileSync, spawnSync } from 'node:child_process';

/**
 * Exits 1 with a message naming the package when `found()` stays false after trying apt.
 * @example ensureDebianPackage({ pkg: 'nginx', binary: 'nginx', found: () => true, neededBy: 'the benchmark' })
 */
export function ensureDebianPackage({ pkg, binary, found, neededBy }) {
  if (found()) return;
  const message = `${binary} is missing: install it with \`apt-get install -y ${pkg}\` (Debian package ${pkg}, binary ${binary})`;
  if (typeof process.getuid !== 'function' || process.getuid() !== 0) {
    console.error(`${message}; run as root to let ${neededBy} install it`);
    process.exit(1);
  }
  try {
    execFileSync('apt-get', ['update', '-qq'], { stdio: ['ignore', 'ignore', 'inherit'] });
    execFileSync('apt-get', ['install', '-y', '-qq', '--no-install-recommends', pkg], {
      stdio: ['ignore', 'ignore', 'inherit'],
      env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' },
    });
  } catch (err) {
    console.error(`${message}; apt-get failed: ${err instanceof Error ? err.message : String(err)}`);
    process.exit(1);
  }
  if (!found()) {
    console.error(`${message}; apt-get ran but no ${binary} binary was found`);
    process.exit(1);
  }
}

/**
 * True when `command` succeeds in a shell (e.g. `command -v etcd`).
 * @example shellSucceeds('command -v nginx') // true on a machine with nginx
 */
export function shellSucceeds(command) {
  return spawnSync('sh', ['-c', command], { stdio: 'ignore' }).status === 0;
}
