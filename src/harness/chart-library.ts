/**
 * uPlot, the chart library of the HTML report, read from its npm package so the page can carry it
 * inline and open offline (no CDN, no network).
 */
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';

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
