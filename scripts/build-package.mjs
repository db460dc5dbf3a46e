#!/usr/bin/env node
// Builds what the published package runs: src/ compiled by the project's TypeScript into ES modules
// and declarations under dist/ (relative imports rewritten to .js), and the topology page bundled
// into ui/dist/. Runs before `npm pack` and `npm publish` (prepack); a checkout runs from src/.
import { spawnSync } from 'node:child_process';
import { existsSync, rmSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const tsc = join(root, 'node_modules', '.bin', 'tsc');
if (!existsSync(tsc)) {
  console.error(`pdlink: cannot build the package: ${tsc} is missing (run npm install first)`);
  process.exit(1);
}
rmSync(join(root, 'dist'), { recursive: true, force: true });
for (const [what, command, args] of [
  ['compile src/ into dist/', tsc, ['-p', join(root, 'tsconfig.build.json')]],
  ['bundle the topology page', process.execPath, [join(root, 'scripts', 'build-ui.mjs')]],
]) {
  const result = spawnSync(command, args, { cwd: root, stdio: 'inherit' });
  if (result.error !== undefined || result.status !== 0) {
    console.error(`pdlink: cannot ${what}: ${result.error?.message ?? `exit ${result.status}`}`);
    process.exit(1);
  }
}
