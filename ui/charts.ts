/**
 * Rate charts over the last minutes, drawn with uPlot: one chart per unit (requests, KV bytes,
 * the controller's posts), each series as the server sampled it.
 */
import uPlot from 'uplot';
import type { DashboardState } from '../src/http/dashboard-state.ts';

const COLOURS = ['#0f62fe', '#da1e28', '#24a148', '#8a3ffc', '#d2a106', '#007d79'];

export class RateCharts {
  readonly #container: HTMLElement;
  readonly #charts = new Map<string, { plot: uPlot; names: string }>();

  constructor(container: HTMLElement) {
    this.#container = container;
  }

  update(state: DashboardState): void {
    const times = state.times.map((t) => t / 1000);
    const byUnit = new Map<string, (typeof state.series)[number][]>();
    for (const s of state.series) byUnit.set(s.unit, [...(byUnit.get(s.unit) ?? []), s]);
    for (const [unit, series] of byUnit) {
      const names = series.map((s) => s.name).join(',');
      const data: uPlot.AlignedData = [times, ...series.map((s) => [...s.values])];
      const existing = this.#charts.get(unit);
      if (existing !== undefined && existing.names === names) {
        existing.plot.setData(data);
        continue;
      }
      existing?.plot.destroy();
      const width = Math.max(300, this.#container.clientWidth - 10);
      const plot = new uPlot(
        {
          title: unit,
          width,
          height: 150,
          series: [{}, ...series.map((s, i) => ({ label: s.name, stroke: COLOURS[i % COLOURS.length]!, width: 2 }))],
          axes: [{}, { size: 70, values: (_, ticks) => ticks.map(short) }],
        },
        data,
        this.#container,
      );
      this.#charts.set(unit, { plot, names });
    }
  }
}

/** 1500000 → 1.5M: axis labels stay narrow whatever the unit. */
function short(n: number): string {
  const abs = Math.abs(n);
  if (abs >= 1e9) return `${+(n / 1e9).toFixed(1)}G`;
  if (abs >= 1e6) return `${+(n / 1e6).toFixed(1)}M`;
  if (abs >= 1e3) return `${+(n / 1e3).toFixed(1)}k`;
  return `${+n.toFixed(2)}`;
}
