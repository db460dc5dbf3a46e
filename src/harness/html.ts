/**
 * The HTML page of a report: a summary table per run, latency CDFs (TTFT, TPOT, inter-token,
 * end to end), a timeline of load and latency, and with a role timeline the cluster's serving
 * prefill and decode instances over the run and the moves between roles, drawn by uPlot. Everything — the library, its
 * style sheet and the data — is inline by default, so the file opens offline and can be mailed
 * around; or the page references the library's files beside it (chart-library.ts writes them once).
 */
import { chartData } from './chart-data.ts';
import { CHART_LIBRARY_FILES, chartLibrary } from './chart-library.ts';
import type { BenchReport } from './report.ts';
import type { Percentiles } from './stats.ts';

/** `inline`: the page carries the library; `beside`: it references the library's files in its directory. */
export type ChartLibraryPlacement = 'inline' | 'beside';

/**
 * Renders the page.
 * @example writeFileSync('bench.html', renderHtml(report));
 */
export function renderHtml(report: BenchReport, options: { readonly chartLibrary?: ChartLibraryPlacement } = {}): string {
  const library = options.chartLibrary === 'beside' ? undefined : chartLibrary();
  const data = { runs: chartData(report) };
  return `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>pdlink bench: ${escapeHtml(report.target.baseUrl)}</title>
${library === undefined ? `<link rel="stylesheet" href="${CHART_LIBRARY_FILES.style}">` : `<style>${inlineText(library.style)}</style>`}
<style>${PAGE_STYLE}</style>
</head>
<body>
<h1>pdlink bench</h1>
<p>${escapeHtml(report.target.endpoint)} endpoint at <code>${escapeHtml(report.target.baseUrl)}</code>, model <code>${escapeHtml(report.target.model)}</code>;
workload: ${escapeHtml(report.workload.source)} (${report.workload.requests} requests, ${report.workload.blockTokens}-token blocks,
${(report.workload.prefixReuse * 100).toFixed(1)} % of blocks reuse a prefix). SLO: TTFT ≤ ${sloText(report.slo.ttftMs)}, TPOT ≤ ${sloText(report.slo.tpotMs)}.
${report.partial ? '<strong>Partial report: a run was stopped before its workload was done.</strong>' : ''} Created ${escapeHtml(report.createdAt)}.</p>
${report.runs.map(runTable).join('\n')}
<h2>Latency CDFs</h2>
<div id="cdfs" class="charts"></div>
<h2>Timeline: load, latency${report.runs.some((r) => r.roles !== undefined) ? ' and roles' : ''}</h2>
<div id="timelines" class="charts"></div>
<script type="application/json" id="bench-data">${JSON.stringify(data).replace(/</g, '\\u003c')}</script>
${library === undefined ? `<script src="${CHART_LIBRARY_FILES.script}"></script>` : `<script>${inlineText(library.script)}</script>`}
<script>${PAGE_SCRIPT}</script>
</body>
</html>
`;
}

function runTable(run: BenchReport['runs'][number]): string {
  const s = run.summary;
  const row = (name: string, p: Percentiles): string =>
    `<tr><th>${name}</th>${[p.p50, p.p90, p.p99, p.mean, p.max].map((x) => `<td>${fmt(x)}</td>`).join('')}<td>${p.count}</td></tr>`;
  const errors = Object.entries(s.errorsByStatus)
    .map(([status, n]) => `${escapeHtml(status === '0' ? 'no response' : `HTTP ${status}`)}: ${n}`)
    .join(', ');
  return `<h2>Run ${escapeHtml(run.label)}</h2>
<p>${s.requests} requests in ${(run.durationMs / 1000).toFixed(1)} s (${escapeHtml(run.stoppedBy)}): ${s.completed} completed, ${s.failed} failed${errors === '' ? '' : ` (${errors})`}, ${s.cut} cut.
Throughput ${s.throughput.requestsPerS.toFixed(2)} req/s, ${s.throughput.outputTokensPerS.toFixed(1)} output tokens/s;
goodput ${s.goodput.requestsPerS.toFixed(2)} req/s (${(s.goodput.share * 100).toFixed(1)} % of requests met the SLO).</p>
<table>
<thead><tr><th>ms</th><th>p50</th><th>p90</th><th>p99</th><th>mean</th><th>max</th><th>n</th></tr></thead>
<tbody>
${row('TTFT', s.ttftMs)}
${row('TPOT', s.tpotMs)}
${row('inter-token', s.itlMs)}
${row('end to end', s.e2eMs)}
${row('send drift', s.driftMs)}
</tbody>
</table>${movesTable(run)}`;
}

/** The moves between roles that ended during a run, with the controller it watched. */
function movesTable(run: BenchReport['runs'][number]): string {
  const roles = run.roles;
  if (roles === undefined) return '';
  const s = (ms: number): string => (ms / 1000).toFixed(1);
  const rows = roles.moves
    .map(
      (m) =>
        `<tr><td>${m.id}</td><td>${escapeHtml(`${m.from} → ${m.to}`)}</td><td>${escapeHtml(m.by)}</td><td>${s(m.startedMs)}</td><td>${s(m.endedMs)}</td><td>${escapeHtml(m.outcome)}</td></tr>`,
    )
    .join('\n');
  return `
<p>Roles read from <code>${escapeHtml(roles.controller)}</code> (${roles.polls} reads, ${roles.failedPolls} unanswered): ${roles.moves.length} move(s) between roles ended during the run.</p>
${rows === '' ? '' : `<table>\n<thead><tr><th>instance</th><th>move</th><th>by</th><th>began (s)</th><th>ended (s)</th><th>outcome</th></tr></thead>\n<tbody>\n${rows}\n</tbody>\n</table>`}`;
}

function fmt(x: number | null): string {
  return x === null ? '–' : x.toFixed(1);
}

function sloText(ms: number | null): string {
  return ms === null ? 'any' : `${ms} ms`;
}

function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

/** Text safe inside <script> and <style>: nothing in it can close the element. */
function inlineText(text: string): string {
  return text.replace(/<\//g, '<\\/').replace(/<!--/g, '<\\!--');
}

const PAGE_STYLE = `body{font-family:system-ui,sans-serif;margin:1.5em;max-width:1100px;color:#222}
table{border-collapse:collapse;margin:.5em 0 1.5em}th,td{border:1px solid #ccc;padding:.2em .6em;text-align:right}
thead th{background:#f3f3f3}.charts{display:flex;flex-wrap:wrap;gap:1.5em}code{background:#f3f3f3;padding:0 .2em}`;

const PAGE_SCRIPT = `(function () {
  var data = JSON.parse(document.getElementById('bench-data').textContent);
  var colors = ['#1f77b4', '#d62728', '#2ca02c', '#ff7f0e', '#9467bd', '#8c564b', '#e377c2', '#17becf'];
  var metrics = [['ttftMs', 'TTFT (ms)'], ['tpotMs', 'TPOT (ms)'], ['itlMs', 'inter-token latency (ms)'], ['e2eMs', 'end to end (ms)']];
  function box(parent) { var div = document.createElement('div'); document.getElementById(parent).appendChild(div); return div; }
  metrics.forEach(function (m) {
    var tables = data.runs.map(function (run) { return [run.cdf[m[0]].x, run.cdf[m[0]].y]; });
    if (tables.every(function (t) { return t[0].length === 0; })) return;
    var joined = uPlot.join(tables);
    var series = [{ label: m[1] }].concat(data.runs.map(function (run, i) {
      return { label: run.label, stroke: colors[i % colors.length], spanGaps: true, points: { show: false } };
    }));
    new uPlot({ title: 'CDF of ' + m[1], width: 520, height: 300, scales: { x: { time: false }, y: { range: [0, 1] } },
      series: series, axes: [{ label: m[1] }, { label: 'share of requests' }] }, joined, box('cdfs'));
  });
  data.runs.forEach(function (run) {
    var tl = run.timeline;
    new uPlot({ title: 'Run ' + run.label, width: 1060, height: 320,
      scales: { x: { time: false }, load: {}, ms: {} },
      series: [{ label: 's' },
        { label: 'in flight', scale: 'load', stroke: '#1f77b4' },
        { label: 'sent/s', scale: 'load', stroke: '#2ca02c' },
        { label: 'met the SLO/s', scale: 'load', stroke: '#9467bd' },
        { label: 'mean TTFT (ms)', scale: 'ms', stroke: '#d62728', spanGaps: true },
        { label: 'mean TPOT (ms)', scale: 'ms', stroke: '#ff7f0e', spanGaps: true }],
      axes: [{ label: 'seconds from start' }, { scale: 'load', label: 'requests' }, { scale: 'ms', side: 1, label: 'ms', grid: { show: false } }] },
      [tl.t, tl.inFlight, tl.sentPerS, tl.goodPerS, tl.ttftMs, tl.tpotMs], box('timelines'));
    if (!run.roles) return;
    var steps = uPlot.paths.stepped({ align: 1 });
    new uPlot({ title: 'Run ' + run.label + ': roles', width: 1060, height: 220,
      scales: { x: { time: false } },
      series: [{ label: 's' },
        { label: 'serving prefill', stroke: '#1f77b4', paths: steps },
        { label: 'serving decode', stroke: '#d62728', paths: steps },
        { label: 'moving or not serving', stroke: '#7f7f7f', paths: steps }],
      axes: [{ label: 'seconds from start' }, { label: 'instances' }] },
      [run.roles.t, run.roles.prefill, run.roles.decode, run.roles.other], box('timelines'));
  });
})();`;
