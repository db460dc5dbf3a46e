/**
 * deploy/grafana/pdlink.json against real processes: every metric its queries read is exported by
 * the process its row is about (a Coordinator and an instance agent of a simulated cluster with
 * traffic through the proxy, and a controller's app), so the dashboard has no panel that can
 * never show data.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { createControllerApp } from '../src/apps/controller.ts';
import { DEFAULT_TIMING } from '../src/controller/types.ts';
import { exported, families, metricNames } from './support/promql.ts';
import { proxyPost, SimCluster } from './support/sim-cluster.ts';

interface Panel {
  type: string;
  title: string;
  targets?: { expr: string }[];
}

const dashboard = JSON.parse(readFileSync(join(import.meta.dir, '..', 'deploy', 'grafana', 'pdlink.json'), 'utf8')) as {
  panels: Panel[];
  templating: { list: { query?: string | { query: string } }[] };
};

/** The queries of each row, by the process the row's title names. */
function queriesByProcess(): Map<string, { panel: string; expr: string }[]> {
  const out = new Map<string, { panel: string; expr: string }[]>();
  let process = '';
  for (const panel of dashboard.panels) {
    if (panel.type === 'row') {
      process = /^(Coordinator|Agents|Controller)\b/.exec(panel.title)?.[1] ?? panel.title;
      continue;
    }
    for (const t of panel.targets ?? []) out.set(process, [...(out.get(process) ?? []), { panel: panel.title, expr: t.expr }]);
  }
  return out;
}

let cluster: SimCluster;
const exposition = new Map<string, string>();

beforeAll(async () => {
  cluster = await SimCluster.start({ prefill: 1, decode: 1 });
  // Traffic first, so labelled families have their series too.
  const res = await proxyPost(
    cluster,
    '/v1/completions',
    { model: cluster.model, prompt: 'grafana '.repeat(40), max_tokens: 4 },
    'grafana-1',
  );
  expect(res.status).toBe(200);
  await res.text();
  exposition.set('Coordinator', await (await fetch(`${cluster.coordinatorUrl}/metrics`)).text());
  exposition.set('Agents', await (await fetch(`${cluster.decodes[0]!.manageUrl}/metrics`)).text());
  // The controller's composition root, as `pdlink controller` builds it.
  const controller = createControllerApp({
    spec: { coordinators: [], timing: DEFAULT_TIMING, rates: { p: 0, d: 0 }, instances: [] },
    processMetrics: true,
  });
  exposition.set('Controller', await (await controller.managementApp.request('/metrics')).text());
  await controller.close();
}, 60_000);

afterAll(async () => {
  await cluster?.stop();
});

describe('deploy/grafana/pdlink.json', () => {
  test('the metric-name reader finds metrics, not functions, labels, ranges or variables', () => {
    expect(
      metricNames('histogram_quantile(0.99, sum by (le, op) (rate(pdlink_a_bucket{job=~"$job", x="y z"}[$__rate_interval])))'),
    ).toEqual(['pdlink_a_bucket']);
    expect(metricNames('count(pdlink_b{job=~"$job"} == 2) or vector(0)')).toEqual(['pdlink_b']);
    expect(metricNames('sum(rate(pdlink_c_total[5m])) / ignoring(x) pdlink_d')).toEqual(['pdlink_c_total', 'pdlink_d']);
    const declared = families('# TYPE pdlink_h histogram\n# TYPE pdlink_g gauge\n');
    expect(['pdlink_h_bucket', 'pdlink_h_count', 'pdlink_g', 'pdlink_g_count', 'pdlink_nope'].map((n) => exported(n, declared))).toEqual([
      true,
      true,
      true,
      false,
      false,
    ]);
  });

  test('has rows for the Coordinator, the agents and the controller, covering every leg and the reconciliation', () => {
    const byProcess = queriesByProcess();
    expect([...byProcess.keys()].sort()).toEqual(['Agents', 'Controller', 'Coordinator']);
    const read = new Set([...byProcess.values()].flat().flatMap((q) => metricNames(q.expr)));
    for (const name of [
      'pdlink_pd_requests_total',
      'pdlink_pd_prefill_duration_seconds_bucket',
      'pdlink_pd_kv_transfer_duration_seconds_bucket',
      'pdlink_pd_decode_duration_seconds_bucket',
      'pdlink_pd_pair_selections_total',
      'pdlink_kv_bytes_moved_total',
      'pdlink_ledger_reserved_slots',
      'pdlink_links',
      'pdlink_circuit_state',
      'pdlink_role_reconcile_duration_seconds_bucket',
    ]) {
      expect(read).toContain(name);
    }
  });

  test('every metric a query reads is exported by the process its row is about', () => {
    const missing: string[] = [];
    let checked = 0;
    for (const [process, queries] of queriesByProcess()) {
      const declared = families(exposition.get(process)!);
      for (const { panel, expr } of queries) {
        const names = metricNames(expr);
        expect(names.length).toBeGreaterThan(0);
        for (const name of names) {
          checked++;
          if (!exported(name, declared)) missing.push(`${process} / ${panel}: ${name}`);
        }
      }
    }
    expect(missing).toEqual([]);
    expect(checked).toBeGreaterThan(30);
  });

  test("the job variable lists the jobs of series named like pdlink's, which every process exports", () => {
    const queries = dashboard.templating.list.flatMap((v) => (v.query === undefined || typeof v.query === 'string' ? [] : [v.query.query]));
    expect(queries).toEqual(['label_values({__name__=~"pdlink_.+"}, job)']);
    for (const [process, text] of exposition) {
      expect(`${process}: ${[...families(text).keys()].some((name) => /^pdlink_.+$/.test(name))}`).toBe(`${process}: true`);
    }
  });
});
