#!/usr/bin/env node
/**
 * The HA tests run a real etcd (Debian's `etcd-server`). This makes sure the `etcd` binary is
 * there, installing the package when it can. Run by `npm test`'s pretest and by the test helper
 * that starts etcd, so a fresh machine needs no other step.
 */
import { ensureDebianPackage, shellSucceeds } from './debian-package.mjs';

ensureDebianPackage({ pkg: 'etcd-server', binary: 'etcd', found: () => shellSucceeds('command -v etcd'), neededBy: 'the tests' });
