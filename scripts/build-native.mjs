#!/usr/bin/env node
// Builds the host reference runtime (native/) with make, which rebuilds only what changed.
// Runs from postinstall, prestart and pretest so a fresh clone needs no extra step.
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const makefile = join(root, 'native', 'Makefile');
if (!existsSync(makefile)) process.exit(0);
const result = spawnSync('make', ['-s', '-C', join(root, 'native')], { stdio: 'inherit' });
if (result.error) {
  console.error(`pdlink: cannot run make to build native/: ${result.error.message}`);
  process.exit(1);
}
process.exit(result.status ?? 1);
