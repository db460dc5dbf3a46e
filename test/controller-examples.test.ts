/**
 * The controller's sample files run as a new user runs them: `pdlink sim-cluster --wire controller`
 * starts two engines and prints the topology file that wires them, which is
 * examples/controller/cluster.json; `pdlink controller` on that file (or on the MindIE-style set in
 * examples/controller/mindie/) wires the engines and keeps a Coordinator informed, and a completion
 * goes through; examples/ha/ runs two Coordinators (master/standby) and two controllers on one etcd.
 * The samples name the documented loopback addresses (127.0.0.1, .11, .12, etcd on :2379); the
 * test copies them with fresh loopback addresses and the test etcd, the ports left as written, so
 * it never collides with a cluster already running on the defaults. Ctrl-C (SIGINT) stops every
 * process with status 0.
 */
import { afterAll, describe, expect, test } from 'bun:test';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { REPO_ROOT, startPdlink, type PdlinkChild } from './support/child.ts';
import { TestEtcd } from './support/etcd.ts';
import { until } from './support/sim-cluster.ts';

const EXAMPLES = join(REPO_ROOT, 'examples');
const dir = mkdtempSync(join(tmpdir(), 'pdlink-examples-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function loopback(last: number): string {
  return `127.${100 + Math.floor(Math.random() * 100)}.${Math.floor(Math.random() * 256)}.${last}`;
}

interface Place {
  readonly coordinator: string;
  readonly prefill: string;
  readonly decode: string;
  readonly etcd?: string;
}

/** The sample's text with this run's addresses. */
function localized(text: string, place: Place): string {
  const ETCD = '\u0000etcd\u0000';
  let out = place.etcd === undefined ? text : text.replaceAll('http://127.0.0.1:2379', ETCD);
  out = out.replace(/127\.0\.0\.11(?!\d)/g, place.prefill).replace(/127\.0\.0\.12(?!\d)/g, place.decode);
  out = out.replace(/127\.0\.0\.1(?!\d)/g, place.coordinator);
  return place.etcd === undefined ? out : out.replaceAll(ETCD, place.etcd);
}

/** Copies a sample folder with this run's addresses; returns where. */
function copySamples(folder: string, place: Place): string {
  const to = mkdtempSync(join(dir, `${folder.replaceAll('/', '-')}-`));
  for (const name of readdirSync(join(EXAMPLES, folder)).filter((n) => n.endsWith('.json')))
    writeFileSync(join(to, name), localized(readFileSync(join(EXAMPLES, folder, name), 'utf8'), place));
  return to;
}

const started: PdlinkChild[] = [];
// After a failure: SIGTERM, so that sim-cluster stops its engines too (a SIGKILL would leave them running).
afterAll(async () => {
  await Promise.all(started.map((c) => c.kill('SIGTERM')));
});

async function start(args: string[], listeners: string[], printed?: string): Promise<PdlinkChild> {
  const child = await startPdlink(args, { listeners, cwd: dir, deadlineMs: 60_000, ...(printed === undefined ? {} : { printed }) });
  started.push(child);
  return child;
}

/** Ctrl-C: SIGINT, and the status it exits with. */
async function interrupt(child: PdlinkChild): Promise<number | string> {
  return child.kill('SIGINT');
}

/** The two engines, roles left to a controller; resolves with the topology file they print. */
async function engines(place: Place): Promise<{ child: PdlinkChild; topology: { instances: unknown[] } }> {
  const child = await start(
    ['sim-cluster', '--wire', 'controller', '--prefill_ip', place.prefill, '--decode_ip', place.decode],
    ['prefill-inference', 'prefill-management', 'decode-inference', 'decode-management'],
    'wires them with this FILE:',
  );
  const topology = await until(
    async () => {
      const text = child.output().split('wires them with this FILE:\n')[1] ?? '';
      try {
        return JSON.parse(text) as { instances: unknown[] };
      } catch {
        return undefined;
      }
    },
    20_000,
    () => `no topology printed:\n${child.output()}`,
  );
  return { child, topology };
}

async function coordinatorIds(manage: string): Promise<number[]> {
  try {
    const view = (await (await fetch(`${manage}/v1/instances`)).json()) as { instances: { id: number }[] };
    return view.instances.map((i) => i.id).sort((a, b) => a - b);
  } catch {
    return [];
  }
}

async function servesBoth(manage: string): Promise<void> {
  let last: number[] = [];
  await until(
    async () => ((last = await coordinatorIds(manage)).join() === '0,1' ? true : undefined),
    30_000,
    () => `the Coordinator at ${manage} holds ${JSON.stringify(last)}`,
  );
}

async function completion(inference: string): Promise<void> {
  const res = await fetch(`${inference}/v1/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'pdlink-sim', prompt: 'Hello, controller', max_tokens: 8 }),
  });
  const body = (await res.json()) as { usage?: { completion_tokens: number } };
  expect({ status: res.status, tokens: body.usage?.completion_tokens }).toEqual({ status: 200, tokens: 8 });
}

describe("the controller's sample files", () => {
  test('examples/controller/cluster.json is what sim-cluster --wire controller prints, and wires it (then the MindIE-style set does)', async () => {
    const place = { coordinator: loopback(1), prefill: loopback(11), decode: loopback(12) };
    const coordinator = await start(
      ['coordinator', '--manage_ip', place.coordinator, '--predict_ip', place.coordinator],
      ['management', 'inference'],
    );
    const sims = await engines(place);
    const sample = copySamples('controller', place);
    const file = JSON.parse(readFileSync(join(sample, 'cluster.json'), 'utf8')) as { coordinators: string[]; instances: unknown[] };
    expect(sims.topology.instances).toEqual(file.instances);
    expect(file.coordinators).toEqual([coordinator.urls['management']!]);

    const controller = await start(['controller', '--config', join(sample, 'cluster.json'), '--manage_port', '0'], ['controller']);
    await servesBoth(coordinator.urls['management']!);
    await completion(coordinator.urls['inference']!);
    expect(controller.output()).toContain("timings: pdlink's defaults");
    expect(await interrupt(controller)).toBe(0);

    // MindIE's inputs: ms_controller.json's timings and rates, the rank table's devices.
    const mindie = copySamples('controller/mindie', place);
    const second = await start(['controller', '--config', join(mindie, 'cluster.json'), '--manage_port', '0'], ['controller']);
    const view = (await (await fetch(`${second.urls['controller']}/v1/cluster`)).json()) as {
      desired: { timing_defaults: string; instances: { devices: unknown[] }[] };
    };
    expect(view.desired.timing_defaults).toBe('mindie');
    expect(view.desired.instances.map((i) => i.devices)).toEqual([
      [{ device_logical_id: '0', device_ip: place.prefill }],
      [{ device_logical_id: '0', device_ip: place.decode }],
    ]);
    await until(
      async () => {
        const v = (await (await fetch(`${second.urls['controller']}/v1/cluster`)).json()) as {
          instances: { role: string; state: string }[];
        };
        return v.instances.every((i) => i.state === 'serving') ? v.instances.map((i) => i.role) : undefined;
      },
      30_000,
      () => 'the MindIE-style controller did not get both instances serving',
    ).then((roles) => expect(roles).toEqual(['prefill', 'decode']));
    await servesBoth(coordinator.urls['management']!);
    await completion(coordinator.urls['inference']!);

    expect(await Promise.all([second, sims.child, coordinator].map(interrupt))).toEqual([0, 0, 0]);
    expect(sims.child.output()).not.toContain('while closing');
  }, 120_000);

  test('examples/ha/: two Coordinators (master/standby) and two controllers on one etcd; one leads, the master serves', async () => {
    const etcd = await TestEtcd.start();
    try {
      const place = { coordinator: loopback(1), prefill: loopback(11), decode: loopback(12), etcd: etcd.endpoint };
      const sample = copySamples('ha', place);
      const config = join(sample, 'ms_coordinator.json');
      const coordinators = [
        await start(
          ['coordinator', '--config', config, '--manage_ip', place.coordinator, '--predict_ip', place.coordinator],
          ['management', 'inference'],
        ),
        await start(
          [
            'coordinator',
            '--config',
            config,
            '--manage_ip',
            place.coordinator,
            '--manage_port',
            '1036',
            '--predict_ip',
            place.coordinator,
            '--predict_port',
            '1035',
          ],
          ['management', 'inference'],
        ),
      ];
      const topology = JSON.parse(readFileSync(join(sample, 'cluster.json'), 'utf8')) as { coordinators: string[] };
      expect(topology.coordinators).toEqual(coordinators.map((c) => c.urls['management']!));
      const sims = await engines(place);
      const controllers = await Promise.all(
        ['1030', '1031'].map((port) =>
          start(
            ['controller', '--config', join(sample, 'cluster.json'), '--manage_ip', place.coordinator, '--manage_port', port],
            ['controller'],
          ),
        ),
      );
      // One controller leads, the other stands by naming it.
      let last = '';
      const leadership = await until(
        async () => {
          const views = await Promise.all(
            controllers.map(
              async (c) =>
                ((await (await fetch(`${c.urls['controller']}/v1/cluster`)).json()) as { leadership: { state: string } }).leadership,
            ),
          );
          last = JSON.stringify(views);
          const states = views.map((v) => v.state).sort();
          return states.join() === 'leader,standby' ? views : undefined;
        },
        30_000,
        () => `no leader and standby: ${last}\n${controllers.map((c) => c.output()).join('\n')}`,
      );
      expect(leadership.map((v) => v.state).sort()).toEqual(['leader', 'standby']);
      // Exactly one Coordinator is the master; both hold the snapshot.
      const master = await until(
        async () => {
          const ready = await Promise.all(coordinators.map(async (c) => (await fetch(`${c.urls['management']}/v1/readiness`)).status));
          return ready.filter((s) => s === 200).length === 1 ? ready.indexOf(200) : undefined;
        },
        30_000,
        () => 'no single master Coordinator',
      );
      for (const c of coordinators) await servesBoth(c.urls['management']!);
      await completion(coordinators[master]!.urls['inference']!);
      expect(await Promise.all([...controllers, sims.child, ...coordinators].map(interrupt))).toEqual([0, 0, 0, 0, 0]);
    } finally {
      await etcd.destroy();
    }
  }, 180_000);
});
