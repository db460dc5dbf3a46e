#!/usr/bin/env node
// The browser tests drive Debian's headless Chromium; this puts it on the machine when it is
// missing so the test command still does all the set-up on a fresh clone. Quiet and idempotent:
// it does nothing when a Chromium is already installed (or PDLINK_CHROMIUM names one).
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';

const CANDIDATES = ['/usr/bin/chromium', '/usr/bin/chromium-browser', '/usr/bin/google-chrome'];
const named = process.env.PDLINK_CHROMIUM;
if (named !== undefined && named !== '') {
  if (existsSync(named)) process.exit(0);
  fail(`PDLINK_CHROMIUM=${named} does not exist`);
}
if (CANDIDATES.some((path) => existsSync(path))) process.exit(0);

if (typeof process.getuid !== 'function' || process.getuid() !== 0) {
  fail('Chromium is missing and installing it needs root: run `apt-get update && apt-get install -y chromium`');
}
const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
for (const args of [
  ['update', '-qq'],
  ['install', '-y', '-qq', '--no-install-recommends', 'chromium'],
]) {
  const result = spawnSync('apt-get', args, { stdio: ['ignore', 'ignore', 'inherit'], env });
  if (result.error !== undefined || result.status !== 0) {
    fail(
      `\`apt-get ${args.join(' ')}\` failed (${result.error?.message ?? `exit ${result.status}`}); install the Debian package \`chromium\``,
    );
  }
}
if (!CANDIDATES.some((path) => existsSync(path))) fail('apt-get installed chromium but no browser is at /usr/bin/chromium');

function fail(message) {
  console.error(`pdlink: the browser tests need Chromium: ${message}`);
  process.exit(1);
}
