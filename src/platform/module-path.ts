/**
 * Where pdlink's own modules are, for what starts one by its path (a worker thread, a child
 * process): from a checkout they are the TypeScript sources under src/, from the installed package
 * the JavaScript the package was built into (dist/), one file for each source at the same place.
 */
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** `.ts` when pdlink runs from its sources, `.js` when it runs from the built package. */
export const MODULE_EXTENSION = import.meta.url.endsWith('.ts') ? '.ts' : '.js';

/** The directory holding pdlink's modules: src/ or dist/. */
export const MODULE_ROOT = dirname(dirname(fileURLToPath(import.meta.url)));

/**
 * The file of one of pdlink's modules, named by its path under src/ without the extension.
 * @example pdlinkModule('cli/sim-engine') // '/…/pdlink/src/cli/sim-engine.ts'
 */
export function pdlinkModule(path: string): string {
  return join(MODULE_ROOT, `${path}${MODULE_EXTENSION}`);
}
