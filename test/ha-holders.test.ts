/**
 * One holder of a title at any instant, on a real three-member etcd: two controllers (leader and
 * standby) and two Coordinators (master and standby), every one sampled every 50 ms, through the
 * faults that made two leaders before: the holder's lease revoked, the holder stopped (SIGSTOP) for
 * 3 s so its lease lapses while it sleeps, and an etcd member killed and started again (the etcd
 * leader, then a follower). Each fault is repeated (HA_REPEAT, default 2).
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { HaCluster, when } from './support/ha-cluster.ts';
import { HolderWatch, type HolderProbe } from './support/holders.ts';

const REPEAT = Number(process.env['HA_REPEAT'] ?? 2);
const STOP_MS = 3000;

let ha: HaCluster;
let leaders: HolderWatch;
let masters: HolderWatch;
/** Every change of title the processes logged, with when this process read it. */
const titleLog: string[] = [];

function controllerProbe(i: number): HolderProbe {
  return {
    name: `controller-${i}`,
    holds: async () => {
      const res = await fetch(`${ha.controllerUrl(i)}/v1/cluster`, { signal: AbortSignal.timeout(1000) });
      return ((await res.json()) as { leadership: { state: string } }).leadership.state === 'leader';
    },
  };
}

function coordinatorProbe(i: number): HolderProbe {
  return {
    name: `coordinator-${i}`,
    holds: async () => {
      const res = await fetch(`${ha.manageUrl(i)}/v1/readiness`, { signal: AbortSignal.timeout(1000) });
      if (res.status === 200) return true;
      return (await res.text()).includes('not master') ? false : undefined;
    },
  };
}

/** Index of the one holder, once exactly one process of `watch` holds the title. */
async function holder(watch: HolderWatch, what: string): Promise<number> {
  let found = -1;
  await when(async () => {
    const latest = watch.latest();
    const holders = latest.flatMap((h, i) => (h === true ? [i] : []));
    if (holders.length !== 1 || latest.some((h) => h === undefined)) return false;
    found = holders[0]!;
    return true;
  }, `exactly one ${what}`);
  return found;
}

async function oneOfEach(): Promise<{ leader: number; master: number }> {
  await ha.leader();
  return { leader: await holder(leaders, 'leader controller'), master: await holder(masters, 'master Coordinator') };
}

function expectNoOverlap(): void {
  for (const watch of [leaders, masters]) {
    const overlaps = watch.overlaps();
    // What both answered around the first overlap, and every change of title logged, to read it by.
    if (overlaps.length > 0) {
      console.log(`overlap ${JSON.stringify(overlaps[0])}:\n${watch.around(overlaps[0]!.from - 1000, overlaps[0]!.to + 1000)}`);
      console.log(`changes of title:\n${titleLog.join('\n')}`);
    }
    expect(overlaps).toEqual([]);
  }
}

beforeAll(async () => {
  ha = await HaCluster.start({
    mode: 'master_standby',
    etcdMembers: 3,
    onLine: (line) =>
      /elected|standing down|taken back|not leader/.test(line) && titleLog.push(`${new Date().toISOString().slice(11, 23)} ${line}`),
  });
  await ha.leader();
  leaders = new HolderWatch([controllerProbe(0), controllerProbe(1)]);
  masters = new HolderWatch([coordinatorProbe(0), coordinatorProbe(1)]);
  await oneOfEach();
}, 120_000);
afterAll(async () => {
  leaders?.stop();
  masters?.stop();
  await ha?.stop();
});

describe('one holder of each title at any instant on a three-member etcd', () => {
  for (let round = 1; round <= REPEAT; round++) {
    test(`round ${round}: the holder's lease revoked (leader controller, then master Coordinator)`, async () => {
      const before = await oneOfEach();
      const leaderLease = await ha.etcd.leaseOf('/pdlink/ha/controller/leader');
      await ha.etcd.revokeLease(leaderLease!);
      await when(async () => (await ha.etcd.leaseOf('/pdlink/ha/controller/leader')) !== leaderLease, 'a new leader key');
      const masterLease = await ha.etcd.leaseOf('/pdlink/ha/coordinator/master_lock');
      await ha.etcd.revokeLease(masterLease!);
      await when(async () => (await ha.etcd.leaseOf('/pdlink/ha/coordinator/master_lock')) !== masterLease, 'a new master lock');
      const after = await oneOfEach();
      console.log(`round ${round} revocation: leader ${before.leader} → ${after.leader}, master ${before.master} → ${after.master}`);
      expectNoOverlap();
    }, 120_000);

    test(`round ${round}: the holder stopped for ${STOP_MS / 1000} s (SIGSTOP), its lease lapsing while it sleeps`, async () => {
      for (const title of ['leader', 'master'] as const) {
        const before = await oneOfEach();
        const [watch, index] = title === 'leader' ? [leaders, before.leader] : [masters, before.master];
        const pid = (title === 'leader' ? ha.controllers[index]! : ha.coordinators[index]!).child.pid!;
        process.kill(pid, 'SIGSTOP');
        const stoppedAt = Date.now();
        // The other takes the title while the holder sleeps.
        await when(async () => watch.latest()[1 - index] === true, `the other ${title} takes the title`);
        await when(async () => Date.now() - stoppedAt >= STOP_MS, 'the stop');
        process.kill(pid, 'SIGCONT');
        const after = await oneOfEach();
        console.log(`round ${round} SIGSTOP of the ${title}: leader → ${after.leader}, master → ${after.master}`);
        expectNoOverlap();
      }
    }, 120_000);

    test(`round ${round}: an etcd member killed and started again (the etcd leader, then a follower)`, async () => {
      for (const which of ['leader', 'follower'] as const) {
        await oneOfEach();
        const etcdLeader = await ha.etcd.leaderIndex();
        const member = which === 'leader' ? etcdLeader! : (etcdLeader! + 1) % 3;
        await ha.etcd.members[member]!.stop();
        await ha.etcd.healthy();
        await when(async () => true, 'a moment');
        await ha.etcd.resumeMember(member);
        const after = await oneOfEach();
        console.log(`round ${round} etcd ${which} killed and restarted: leader ${after.leader}, master ${after.master}`);
        expectNoOverlap();
      }
    }, 120_000);
  }

  test('the watch sampled every process all along', () => {
    expect(leaders.count).toBeGreaterThan(100);
    expect(masters.count).toBeGreaterThan(100);
    expectNoOverlap();
  });
});
