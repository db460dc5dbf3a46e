/**
 * A device runtime library without the optional call queue: every required pdrt symbol, each
 * refusing its call with PDRT_PARAM_INVALID, the ABI version pdlink needs, and no pdrt_calls_*.
 * Built with the machine's C compiler into a folder the caller owns.
 */
import { spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { PDRT_ABI_VERSION } from '../../src/ffi/library.ts';
import { SYMBOLS } from '../../src/ffi/symbols.ts';

/**
 * Builds the library in `dir` and returns its path; throws with the compiler's output on failure.
 * @example const library = buildNoQueueRuntime(mkdtempSync(join(tmpdir(), 'x-')));
 */
export function buildNoQueueRuntime(dir: string): string {
  const source = join(dir, 'noqueue.c');
  const library = join(dir, 'libnoqueue.so');
  const stubs = Object.keys(SYMBOLS).map((name) =>
    name === 'pdrt_abi_version' ? `int pdrt_abi_version(void) { return ${PDRT_ABI_VERSION}; }` : `int ${name}(void) { return 0x5010B005; }`,
  );
  writeFileSync(source, `${stubs.join('\n')}\n`);
  const cc = spawnSync('cc', ['-shared', '-fPIC', '-o', library, source], { encoding: 'utf8' });
  if (cc.status !== 0) throw new Error(`cc failed: ${cc.stderr}`);
  return library;
}
