/**
 * uPlot, the chart library of the HTML report, read from its npm package so the page can carry it
 * inline and open offline (no CDN, no network).
 */
import { readFileSync } from 'node:fs';

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
  loaded ??= {
    script: readFileSync(Bun.resolveSync('uplot/dist/uPlot.iife.min.js', import.meta.dir), 'utf8'),
    style: readFileSync(Bun.resolveSync('uplot/dist/uPlot.min.css', import.meta.dir), 'utf8'),
  };
  return loaded;
}
