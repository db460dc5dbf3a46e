/**
 * The topology page: one EventSource on `dashboard/events` (the browser reconnects it by itself),
 * each state message redrawing the graph, the charts and the tables.
 */
import type { DashboardState } from '../src/http/dashboard-state.ts';
import { RateCharts } from './charts.ts';
import { TopologyGraph } from './graph.ts';
import { renderTables } from './tables.ts';

const graph = new TopologyGraph(document.getElementById('graph')!);
const charts = new RateCharts(document.getElementById('charts')!);
const connection = document.getElementById('connection')!;

function show(state: DashboardState): void {
  document.getElementById('source')!.textContent = state.source;
  const linked = state.links.filter((l) => l.state === 'ok').length;
  document.getElementById('summary')!.textContent =
    `${state.instances.length} instances · ${linked}/${state.links.length} links ok · updated ${new Date(state.at).toLocaleTimeString()}`;
  renderNotices(state);
  renderTables(state);
  graph.update(state);
  charts.update(state);
  document.body.dataset['updatedAt'] = String(state.at);
  // Live once the page shows the server's state, not merely once the stream is open.
  if (connection.dataset['state'] === 'connected') {
    connection.dataset['state'] = 'open';
    connection.textContent = 'live';
  }
}

/** Standing facts (the controller's topology file: applied, or refused and why) above the panels. */
function renderNotices(state: DashboardState): void {
  const box = document.getElementById('notices')!;
  box.replaceChildren(
    ...state.notices.map((n) => {
      const line = document.createElement('p');
      line.dataset['ok'] = String(n.ok);
      line.textContent = `${n.subject}, read ${new Date(n.at).toLocaleTimeString()}: ${n.message}`;
      return line;
    }),
  );
}

const events = new EventSource('dashboard/events');
events.addEventListener('open', () => {
  connection.dataset['state'] = 'connected';
  connection.textContent = 'connected, waiting for the first state';
});
events.addEventListener('error', () => {
  connection.dataset['state'] = 'closed';
  connection.textContent = 'reconnecting';
});
events.addEventListener('state', (event) => show(JSON.parse((event as MessageEvent<string>).data) as DashboardState));
