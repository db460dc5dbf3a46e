/**
 * The topology page in a real browser: headless Chromium (Debian's, through puppeteer-core) opens
 * `/dashboard` on the controller and on the Coordinator of a simulated 2 P + 2 D cluster wired by
 * the controller, and the tests read the DOM the page builds from its SSE stream. A killed decode
 * engine's links turn failed within a bounded wait and ok again once it is restarted.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import type { Browser, Page } from 'puppeteer-core';
import { launchBrowser, pageUntil, screenshot } from './support/browser.ts';
import { snapshotWhen, startController, SteadyLoad, type RunningController } from './support/controller.ts';
import { proxyPost, SimCluster, until } from './support/sim-cluster.ts';

/**
 * The little of the DOM these tests read. The functions given to `page.evaluate` run in the page,
 * where `document` is the real one; declaring it here keeps the DOM typings out of the project.
 */
interface PageElement {
  readonly dataset: Record<string, string | undefined>;
  readonly textContent: string | null;
}
declare const document: {
  querySelectorAll(selector: string): ArrayLike<PageElement> & Iterable<PageElement>;
  querySelector(selector: string): PageElement | null;
  getElementById(id: string): PageElement | null;
};

/** The little of a cytoscape instance the first-load test reads. */
interface LaidOut {
  nodes(selector: string): { length: number; renderedBoundingBox(): { x1: number; y1: number; x2: number; y2: number } };
  width(): number;
  height(): number;
}

let cluster: SimCluster;
let controller: RunningController;
let browser: Browser;

beforeAll(async () => {
  cluster = await SimCluster.start({ prefill: 2, decode: 2, wire: false });
  controller = await startController(cluster, cluster.engines);
  browser = await launchBrowser();
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await controller?.process.stop();
  await cluster?.stop();
});

/** Rows of a table as `data-*` attribute maps. */
function rowsOf(page: Page, table: string): Promise<Record<string, string>[]> {
  return page.evaluate(
    (id) => [...document.querySelectorAll(`#${id} tbody tr`)].map((tr) => ({ ...tr.dataset }) as Record<string, string>),
    table,
  );
}

/** Runs in the page: `p-d` → state of every link it shows. */
const LINK_STATES = (): Record<string, string> =>
  Object.fromEntries([...document.querySelectorAll('#links tbody tr')].map((tr) => [tr.dataset['link'] ?? '', tr.dataset['state'] ?? '']));

const allPairs = (): string[] => cluster.prefills.flatMap((p) => cluster.decodes.map((d) => `${p.id}-${d.id}`)).sort();

describe('/dashboard in headless Chromium', () => {
  test('the controller page shows every instance and every link ok, drawn as a graph', async () => {
    const page = await browser.newPage();
    await page.goto(`${controller.url}/dashboard`);
    const links = await pageUntil(
      page,
      LINK_STATES,
      (l) => Object.keys(l).length === 4 && Object.values(l).every((s) => s === 'ok'),
      20_000,
      'all four links ok',
    );
    expect(Object.keys(links).sort()).toEqual(allPairs());
    const instances = await rowsOf(page, 'instances');
    expect(instances.map((r) => Number(r['instanceId'])).sort((a, b) => a - b)).toEqual(
      cluster.engines.map((e) => e.id).sort((a, b) => a - b),
    );
    expect(instances.every((r) => r['state'] === 'serving')).toBe(true);
    expect(instances.filter((r) => r['role'] === 'decode').length).toBe(2);
    // The graph is drawn by cytoscape onto canvases inside #graph.
    expect(await page.evaluate(() => document.querySelectorAll('#graph canvas').length)).toBeGreaterThan(0);
    expect(await page.evaluate(() => document.getElementById('connection')!.dataset['state'])).toBe('open');
    await page.close();
  }, 60_000);

  test('a first load never shows "live" before the first state, nor a graph with a node outside its box', async () => {
    // Every frame from the first, the page's own state: what the connection says, whether a state
    // was drawn, and where the graph's nodes are while the graph is visible.
    const SAMPLER = `
      window.__seen = { liveBeforeState: 0, visibleOutside: [], frames: 0 };
      const sample = () => {
        const seen = window.__seen;
        seen.frames++;
        const connection = document.getElementById('connection');
        if (connection && connection.textContent === 'live' && !document.body.dataset.updatedAt) seen.liveBeforeState++;
        const graph = document.getElementById('graph');
        const cy = graph && graph._cyreg && graph._cyreg.cy;
        if (cy && cy.nodes('.instance').length > 0 && getComputedStyle(graph).visibility === 'visible') {
          const bb = cy.nodes('.instance').renderedBoundingBox();
          if (bb.x1 < 0 || bb.y1 < 0 || bb.x2 > cy.width() || bb.y2 > cy.height())
            seen.visibleOutside.push([Math.round(bb.x1), Math.round(bb.y1), Math.round(bb.x2), Math.round(bb.y2)]);
        }
        requestAnimationFrame(sample);
      };
      requestAnimationFrame(sample);
    `;
    for (let load = 0; load < 3; load++) {
      const page = await browser.newPage();
      await page.evaluateOnNewDocument(SAMPLER);
      await page.goto(`${controller.url}/dashboard`);
      // Until the graph shows the four instances inside its box: laid out and fitted.
      await pageUntil(
        page,
        () => {
          const graph = document.getElementById('graph') as unknown as { _cyreg?: { cy?: LaidOut } };
          const cy = graph._cyreg?.cy;
          if (cy === undefined || cy.nodes('.instance').length !== 4) return false;
          const bb = cy.nodes('.instance').renderedBoundingBox();
          return bb.x1 >= 0 && bb.y1 >= 0 && bb.x2 <= cy.width() && bb.y2 <= cy.height();
        },
        (shown) => shown,
        20_000,
        'the graph laid out',
      );
      const seen = (await page.evaluate('window.__seen')) as { liveBeforeState: number; visibleOutside: number[][]; frames: number };
      expect(seen.frames).toBeGreaterThan(0);
      expect({ load, liveBeforeState: seen.liveBeforeState, visibleOutside: seen.visibleOutside.slice(0, 3) }).toEqual({
        load,
        liveBeforeState: 0,
        visibleOutside: [],
      });
      expect(await page.evaluate(() => document.getElementById('connection')!.textContent)).toBe('live');
      // The topology file's last load stands under the header.
      const notice = await page.evaluate(() => {
        const line = document.querySelector('#notices p');
        return line === null ? null : { ok: line.dataset['ok'], text: line.textContent };
      });
      expect(notice).toEqual({
        ok: 'true',
        text: expect.stringMatching(/^topology file .*topology\.json, read .*: read at start: 4 instances$/),
      });
      await page.close();
    }
  }, 60_000);

  test('kill -9 a D: its links turn failed on the page, then ok again after a restart', async () => {
    const page = await browser.newPage();
    await page.goto(`${controller.url}/dashboard`);
    await pageUntil(
      page,
      () => document.querySelectorAll('#links tbody tr[data-state="ok"]').length,
      (n) => n === 4,
      20_000,
      'four links ok',
    );
    const d1 = cluster.engine('d1');
    const d1Links = cluster.prefills.map((p) => `${p.id}-${d1.id}`);
    await d1.process.stop('SIGKILL');
    await pageUntil(page, LINK_STATES, (l) => d1Links.every((k) => l[k] === 'failed'), 15_000, `links ${d1Links.join(', ')} failed`);
    const during = await page.evaluate(LINK_STATES);
    // The other D's links are untouched.
    for (const [k, state] of Object.entries(during)) if (!d1Links.includes(k)) expect(state).toBe('ok');
    const reason = await page.evaluate(
      (k) => document.querySelector(`#links tr[data-link="${k}"] td:last-child`)!.textContent,
      d1Links[0]!,
    );
    expect(reason).toContain(`instance ${d1.id}`);
    const d1Row = await page.evaluate((id) => document.querySelector(`#instances tr[data-instance-id="${id}"]`)!.dataset['state'], d1.id);
    expect(d1Row).toBe('down');
    await screenshot(page, 'dashboard-controller-failed');

    await cluster.restart('d1', { wire: false });
    await pageUntil(
      page,
      () => document.querySelectorAll('#links tbody tr[data-state="ok"]').length,
      (n) => n === 4,
      30_000,
      'four links ok again',
    );
    await screenshot(page, 'dashboard-controller-recovered');
    await page.close();
  }, 90_000);

  test('the Coordinator page shows the registry, live rates while requests flow, its circuits and a failed request with its reason', async () => {
    await snapshotWhen(cluster, (held) => held.length === 4);
    const page = await browser.newPage();
    await page.goto(`${cluster.coordinatorUrl}/dashboard`);
    await pageUntil(
      page,
      () => document.querySelectorAll('#links tbody tr[data-state="ok"]').length,
      (n) => n === 4,
      20_000,
      'four links ok',
    );
    const instances = await rowsOf(page, 'instances');
    expect(instances.length).toBe(4);
    expect(instances.every((r) => r['circuit'] === 'closed')).toBe(true);
    expect(await page.evaluate(() => document.getElementById('source')!.textContent)).toBe('coordinator');

    const load = new SteadyLoad(cluster, 2, 'page');
    await load.more(20);
    // uPlot draws one chart per unit once samples arrive; the request rate series shows traffic.
    await pageUntil(
      page,
      () => document.querySelectorAll('#charts .uplot').length,
      (n) => n >= 2,
      20_000,
      'rate charts',
    );
    // The rate sampled over a second of load is above zero (the sampler runs once a second).
    let rates: number[] = [];
    await until(
      async () => {
        const state = (await (await fetch(`${cluster.coordinatorUrl}/dashboard/state`)).json()) as {
          series: { name: string; values: number[] }[];
        };
        rates = state.series.find((s) => s.name === 'requests')?.values ?? [];
        return rates.some((r) => r > 0) ? true : undefined;
      },
      10_000,
      () => `request rates ${JSON.stringify(rates)}`,
    );
    const outcomes = await load.stop();
    expect(outcomes.filter((o) => o.status !== 200)).toEqual([]);

    // A request whose D leg fails is listed with its reason, and charged to that D only.
    await Promise.all(cluster.decodes.map((d) => cluster.faults(d.name, { decode_status: { status: 500, count: 1 } })));
    const failed = await proxyPost(
      cluster,
      '/v1/completions',
      { model: cluster.model, prompt: 'fails '.repeat(8), max_tokens: 4 },
      'page-failed',
    );
    expect(failed.status).toBeGreaterThanOrEqual(500);
    await failed.text();
    const row = await pageUntil(
      page,
      () => document.querySelector('#failures tr[data-subject="page-failed"] td:last-child')?.textContent ?? null,
      (text) => text !== null,
      20_000,
      'the failed request listed',
    );
    expect(row).toContain('decode_failed');
    const charged = await page.evaluate(() =>
      [...document.querySelectorAll('#instances tbody tr')]
        .filter((tr) => tr.dataset['error'] !== undefined)
        .map((tr) => tr.dataset['role']),
    );
    expect(charged).toEqual(['decode']);
    await screenshot(page, 'dashboard-coordinator');
    await page.close();
  }, 60_000);

  test('a page left open does not hold the controller on SIGTERM: it exits 0 and the page shows it lost the stream', async () => {
    const page = await browser.newPage();
    await page.goto(`${controller.url}/dashboard`);
    await pageUntil(
      page,
      () => document.getElementById('connection')!.dataset['state'],
      (s) => s === 'open',
      20_000,
      'stream open',
    );
    expect(await controller.process.stop()).toBe(0);
    await pageUntil(
      page,
      () => document.getElementById('connection')!.dataset['state'],
      (s) => s === 'closed',
      20_000,
      'stream closed',
    );
    await page.close();
  }, 60_000);
});
