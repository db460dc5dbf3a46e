/**
 * Research (not run by CI): how much does etcd grow with pdlink at MindIE's 4096-instance cap (8
 * devices, 100-character model names), idle and busy, and does a 128 MiB quota hold? A three-member
 * etcd at `--quota-backend-bytes` 128 MiB, two controllers, two Coordinators, fake agents; after
 * bring-up, an idle phase, then a busy one (free slots and blocks change with every status answer,
 * as under request load, and one agent forgets its role every 10 s, as a restart does: a role post
 * and a state write each). etcd's database size (physical and in use) is sampled every 30 s, with
 * the controllers' state writes and bytes and any NOSPACE. Prints a JSON summary.
 *
 *   HA_GROWTH_INSTANCES=4096 HA_GROWTH_IDLE_MINUTES=30 HA_GROWTH_BUSY_MINUTES=30 \
 *     HA_GROWTH_TTL=10 HA_GROWTH_POLL=2 bun test/research/ha-etcd-growth.ts
 */
import { HaScale } from '../support/ha-scale.ts';

const INSTANCES = Number(process.env['HA_GROWTH_INSTANCES'] ?? 4096);
const IDLE_MS = Number(process.env['HA_GROWTH_IDLE_MINUTES'] ?? 10) * 60_000;
const BUSY_MS = Number(process.env['HA_GROWTH_BUSY_MINUTES'] ?? 10) * 60_000;
const QUOTA = Number(process.env['HA_GROWTH_QUOTA_BYTES'] ?? 128 * 1024 * 1024);
const SAMPLE_MS = 30_000;

interface Sample {
  readonly atMs: number;
  readonly phase: string;
  readonly dbBytes: number;
  readonly dbInUseBytes: number;
  readonly stateWrites: number;
  readonly stateBytes: number;
  readonly failedWrites: number;
  readonly noSpace: number;
  readonly leader: number | undefined;
}

const started = Date.now();
const scale = await HaScale.start({
  count: INSTANCES,
  devices: 8,
  modelName: 'm'.repeat(100),
  quotaBytes: QUOTA,
  ttlSeconds: Number(process.env['HA_GROWTH_TTL'] ?? 2),
  pollSeconds: Number(process.env['HA_GROWTH_POLL'] ?? 1),
  heartbeatSeconds: Number(process.env['HA_GROWTH_HEARTBEAT'] ?? 5),
});
const samples: Sample[] = [];

async function status(): Promise<{ db: number; inUse: number }> {
  for (const m of scale.etcd.members) {
    const s = await m.gateway('/v3/maintenance/status');
    if (s !== undefined) return { db: Number(s['dbSize']), inUse: Number(s['dbSizeInUse']) };
  }
  return { db: NaN, inUse: NaN };
}

async function both(name: string, labels = ''): Promise<number> {
  const values = await Promise.all([0, 1].map((i) => scale.controllerMetric(i, name, labels)));
  return values.reduce<number>((n, v) => n + (v ?? 0), 0);
}

async function sample(phase: string): Promise<Sample> {
  const db = await status();
  const s: Sample = {
    atMs: Date.now() - started,
    phase,
    dbBytes: db.db,
    dbInUseBytes: db.inUse,
    stateWrites: await both('pdlink_controller_state_writes_total', 'result="ok"'),
    stateBytes: await both('pdlink_controller_state_written_bytes_total'),
    failedWrites: await both('pdlink_controller_state_writes_total', 'result="failed"'),
    noSpace: await both('pdlink_store_no_space'),
    leader: await scale.leader(),
  };
  samples.push(s);
  console.log(JSON.stringify(s));
  return s;
}

async function phase(name: string, ms: number, each?: () => Promise<void>): Promise<{ first: Sample; last: Sample }> {
  const first = await sample(name);
  const end = Date.now() + ms;
  let tick = 0;
  while (Date.now() < end) {
    await new Promise((resolve) => setTimeout(resolve, 10_000));
    await each?.();
    if (++tick % (SAMPLE_MS / 10_000) === 0) await sample(name);
  }
  return { first, last: await sample(name) };
}

function perHour(a: Sample, b: Sample, key: keyof Sample): number {
  return (((b[key] as number) - (a[key] as number)) / (b.atMs - a.atMs)) * 3_600_000;
}

try {
  const leader = await scale.settled(600_000);
  console.log(`bring-up: settled after ${Date.now() - started} ms, leader ${leader}`);
  const bringUp = await sample('bring-up');
  const idle = await phase('idle', IDLE_MS);
  await scale.agents.setBusy(true);
  let k = 0;
  const busy = await phase('busy', BUSY_MS, () => scale.agents.forget((k++ * 97) % INSTANCES));
  const summary = {
    instances: INSTANCES,
    quotaBytes: QUOTA,
    minutes: { idle: IDLE_MS / 60_000, busy: BUSY_MS / 60_000 },
    bringUp: { dbBytes: bringUp.dbBytes, stateWrites: bringUp.stateWrites, stateBytes: bringUp.stateBytes },
    idlePerHour: {
      dbBytes: perHour(idle.first, idle.last, 'dbBytes'),
      dbInUseBytes: perHour(idle.first, idle.last, 'dbInUseBytes'),
      stateBytes: perHour(idle.first, idle.last, 'stateBytes'),
      stateWrites: perHour(idle.first, idle.last, 'stateWrites'),
    },
    busyPerHour: {
      dbBytes: perHour(busy.first, busy.last, 'dbBytes'),
      dbInUseBytes: perHour(busy.first, busy.last, 'dbInUseBytes'),
      stateBytes: perHour(busy.first, busy.last, 'stateBytes'),
      stateWrites: perHour(busy.first, busy.last, 'stateWrites'),
    },
    largestDbBytes: Math.max(...samples.map((s) => s.dbBytes)),
    failedWrites: busy.last.failedWrites,
    noSpaceSeen: samples.some((s) => s.noSpace > 0),
    leaderChanges: samples.filter((s, i) => i > 0 && s.leader !== samples[i - 1]!.leader).length,
  };
  console.log(`SUMMARY ${JSON.stringify(summary, null, 2)}`);
} finally {
  await scale.stop();
}
