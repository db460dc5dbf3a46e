import { afterEach, describe, expect, test } from 'bun:test';
import { ConfigError } from '../core/errors.ts';
import { DEFAULT_TIMING, type DesiredInstance, type TopologySpec } from '../controller/types.ts';
import { createControllerApp, type ControllerApp } from './controller.ts';

const instance = (id: number, ip: string): DesiredInstance => ({
  id,
  manageUrl: `http://${ip}:2000`,
  inferenceUrl: `http://${ip}:3000`,
  modelName: 'm',
  serverIp: ip,
  devices: [{ logicalId: '0', ip }],
  role: id % 2 === 1 ? 'prefill' : 'decode',
  staticInfo: { maxSeqLen: 2048, maxOutputLen: 512, totalSlots: 8, totalBlocks: 64, blockSize: 16 },
});

const spec = (instances: DesiredInstance[]): TopologySpec => ({
  coordinators: [],
  timing: DEFAULT_TIMING,
  rates: { p: 0, d: 0 },
  instances,
});

let app: ControllerApp | undefined;
afterEach(() => app?.close());

/** An app over a "file" whose next read is `file.next` (a spec, or an error to throw). */
function withFile(first: TopologySpec) {
  const file: { next: TopologySpec | Error } = { next: first };
  const logs: string[] = [];
  app = createControllerApp({
    spec: first,
    log: (line) => logs.push(line),
    topologyFile: {
      path: 'cluster.json',
      load: () => {
        if (file.next instanceof Error) throw file.next;
        return file.next;
      },
    },
  });
  const a = app;
  const cluster = async () => ((await (await a.managementApp.request('/v1/cluster')).json()) as Record<string, any>)['topology_file'];
  const notices = async () => ((await (await a.managementApp.request('/dashboard/state')).json()) as { notices: unknown[] }).notices;
  return { app: a, file, logs, cluster, notices };
}

describe('the topology file as an operator sees it', () => {
  test('GET /v1/cluster and the topology page show the last load: read at start, then applied with what it changed', async () => {
    const { app, file, cluster, notices } = withFile(spec([instance(1, '10.0.0.1'), instance(2, '10.0.0.2')]));
    expect(await cluster()).toMatchObject({
      path: 'cluster.json',
      outcome: 'applied',
      message: 'read at start: 2 instances',
      change: null,
    });
    file.next = spec([instance(1, '10.0.0.1'), instance(2, '10.0.0.2'), instance(3, '10.0.0.3')]);
    expect(app.reloadFile()).toMatchObject({ outcome: 'applied', message: 'applied: added 3' });
    expect(await cluster()).toMatchObject({
      outcome: 'applied',
      message: 'applied: added 3',
      issues: [],
      change: { added: [3], removed: [], updated: [], drains_cancelled: [] },
    });
    expect(await notices()).toEqual([
      { subject: 'topology file cluster.json', message: 'applied: added 3', ok: true, at: expect.any(Number) },
    ]);
  });

  test('a file that does not load is shown refused with its error, in the log, the API and the page; the running topology stays', async () => {
    const { app, file, logs, cluster, notices } = withFile(spec([instance(1, '10.0.0.1'), instance(2, '10.0.0.2')]));
    file.next = new ConfigError('config file cluster.json: instances[0].id: must be >= 0');
    expect(app.reloadFile().outcome).toBe('refused');
    const message = 'not applied, the running topology is kept: config file cluster.json: instances[0].id: must be >= 0';
    expect(await cluster()).toMatchObject({ outcome: 'refused', message, change: null });
    expect(logs).toContain(`topology change ignored: ${message}`);
    expect(await notices()).toEqual([{ subject: 'topology file cluster.json', message, ok: false, at: expect.any(Number) }]);
    expect(app.controller.view().members.map((m) => m.id)).toEqual([1, 2]);
  });

  test('a mass removal is refused (409 on POST /v1/cluster/reload, shown in GET /v1/cluster) until forced once', async () => {
    const { app, file, logs, cluster } = withFile(spec([instance(1, '10.0.0.1'), instance(2, '10.0.0.2')]));
    file.next = spec([]);
    const refused = await app.managementApp.request('/v1/cluster/reload', { method: 'POST' });
    expect(refused.status).toBe(409);
    const reason =
      'it removes 2 of 2 instances (100%), more than max_removed_fraction 0.5 allows (instances 1, 2); ' +
      'raise max_removed_fraction in the file, or apply it once with POST /v1/cluster/reload?force=true';
    expect(((await refused.json()) as { error: string }).error).toBe(
      `topology file cluster.json not applied, the running topology is kept: ${reason}`,
    );
    expect(logs).toContain(`topology change refused: ${reason}`);
    expect(await cluster()).toMatchObject({
      outcome: 'refused',
      issues: [{ path: 'instances', message: 'it removes 2 of 2 instances (100%), more than max_removed_fraction 0.5 allows' }],
      change: { removed: [1, 2] },
    });
    expect(app.controller.view().members.map((m) => m.state)).toEqual(['unreachable', 'unreachable']);

    const forced = await app.managementApp.request('/v1/cluster/reload?force=true', { method: 'POST' });
    expect(forced.status).toBe(200);
    expect(await forced.json()).toMatchObject({ outcome: 'applied', change: { removed: [1, 2] } });
    expect(app.controller.view().members.map((m) => m.state)).toEqual(['draining', 'draining']);
  });

  test('a refused file stays the one to diff against: the next good file is judged against what runs', async () => {
    const start = spec([instance(1, '10.0.0.1'), instance(2, '10.0.0.2')]);
    const { app, file } = withFile(start);
    file.next = spec([]);
    expect(app.reloadFile().outcome).toBe('refused');
    // The file is put back with one more instance: only the addition is a change.
    file.next = spec([instance(1, '10.0.0.1'), instance(2, '10.0.0.2'), instance(3, '10.0.0.3')]);
    expect(app.reloadFile()).toMatchObject({ outcome: 'applied', change: { added: [3], removed: [], updated: [], drainsCancelled: [] } });
  });
});
