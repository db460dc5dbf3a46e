#!/usr/bin/env node
// Bundles the topology page (ui/) into ui/dist/ with Bun, so the Coordinator and the controller
// serve it with no internet. Runs from postinstall and pretest; the output is git-ignored.
import { spawnSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const ui = join(root, 'ui');
const dist = join(ui, 'dist');
if (!existsSync(join(ui, 'main.ts'))) process.exit(0);
// The Bun that npm installed beside pdlink; a copy installed as a dependency finds it on the PATH npm sets.
const local = join(root, 'node_modules', '.bin', 'bun');
const bun = existsSync(local) ? local : 'bun';
mkdirSync(dist, { recursive: true });
const result = spawnSync(bun, ['build', join(ui, 'main.ts'), '--outfile', join(dist, 'app.js'), '--target', 'browser', '--minify'], {
  stdio: ['ignore', 'ignore', 'inherit'],
});
if (result.error !== undefined || result.status !== 0) {
  console.error(`pdlink: cannot bundle ui/ with ${bun}: ${result.error?.message ?? `exit ${result.status}`}`);
  process.exit(1);
}
const uplotCss = readFileSync(join(root, 'node_modules', 'uplot', 'dist', 'uPlot.min.css'), 'utf8');
writeFileSync(join(dist, 'app.css'), `${uplotCss}\n${readFileSync(join(ui, 'style.css'), 'utf8')}`);
copyFileSync(join(ui, 'index.html'), join(dist, 'index.html'));
