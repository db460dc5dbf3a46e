/**
 * uPlot, the chart library of the HTML report, read from its npm package so the page can carry it
 * inline and open offline (no CDN, no network), or reference one copy written beside many pages
 * (the reports kept in a repository, where a copy per page would grow it by the library each time).
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';

export interface ChartLibrary {
  readonly script: string;
  readonly style: string;
}

let loaded: ChartLibrary | undefined;

/**
 * uPlot's bundled script and style sheet.
 * @example const { script, style } = chartLibrary();
 */
export function chartLibrary(): ChartLibrary {
  const require = createRequire(import.meta.url);
  loaded ??= {
    script: readFileSync(require.resolve('uplot/dist/uPlot.iife.min.js'), 'utf8'),
    style: readFileSync(require.resolve('uplot/dist/uPlot.min.css'), 'utf8'),
  };
  return loaded;
}

/** The names of the library's two files when they are written beside the pages. */
export const CHART_LIBRARY_FILES = { script: 'uPlot.iife.min.js', style: 'uPlot.min.css' } as const;

/**
 * Writes the library's two files into `dir` unless an identical copy is there already, so every
 * page of that directory shares them.
 * @example writeChartLibrary('bench/results');
 */
export function writeChartLibrary(dir: string): void {
  const library = chartLibrary();
  for (const [part, name] of Object.entries(CHART_LIBRARY_FILES) as [keyof ChartLibrary, string][]) {
    const path = join(dir, name);
    if (existsSync(path) && readFileSync(path, 'utf8') === library[part]) continue;
    writeFileSync(path, library[part]);
  }
}
