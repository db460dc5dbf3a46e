#!/usr/bin/env node
/**
 * The proxy CPU benchmark measures pdlink against nginx (Debian's `nginx`) as the floor of a
 * native proxy. nginx is a benchmark floor only, never a test dependency: this makes sure the
 * `nginx` binary is there when the benchmark runs, installing the package when it can.
 */
import { ensureDebianPackage, shellSucceeds } from './debian-package.mjs';

ensureDebianPackage({
  pkg: 'nginx',
  binary: 'nginx',
  found: () => shellSucceeds('command -v nginx || test -x /usr/sbin/nginx'),
  neededBy: 'the benchmark',
});
