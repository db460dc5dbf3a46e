/**
 * Runs every benchmark (`bench/*.bench.ts`) one after the other, each in its own process so one
 * cannot warm or starve another; `npm run bench -- NAME...` runs only the named ones.
 */
import { readdirSync } from 'node:fs';
import { join } from 'node:path';

const only = new Set(process.argv.slice(2));
const files = readdirSync(import.meta.dir)
  .filter((f) => f.endsWith('.bench.ts'))
  .filter((f) => only.size === 0 || only.has(f.replace('.bench.ts', '')))
  .sort();

let failed = 0;
for (const file of files) {
  console.log(`\n== ${file}`);
  const proc = Bun.spawn([process.execPath, join(import.meta.dir, file)], { stdout: 'inherit', stderr: 'inherit' });
  const code = await proc.exited;
  if (code !== 0) {
    failed++;
    console.error(`${file} exited with ${code}`);
  }
}
process.exit(failed === 0 ? 0 : 1);
