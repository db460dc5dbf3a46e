/**
 * A real etcd for the HA tests: Debian's `etcd-server` on loopback ports with temporary data dirs,
 * installed by scripts/ensure-etcd.mjs when missing. One member by default, or a cluster of three
 * (as production runs it). Members can be killed (kill -9 included), stopped with SIGSTOP and
 * started again on the same ports and data, so a test can take the store (or a part of it) away
 * and give it back. The v3 JSON gateway answers the questions a test asks of etcd itself: which
 * member leads, a lease revoked as an operator would, the database's size.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { until } from '../../src/sim/cluster/process.ts';
import { REPO_ROOT } from './child.ts';

function etcdBinary(): string {
  let found = Bun.which('etcd');
  if (found === null) {
    // One place installs it (as root) or says what to install.
    const run = spawnSync('node', [join(REPO_ROOT, 'scripts', 'ensure-etcd.mjs')], { encoding: 'utf8' });
    found = Bun.which('etcd');
    if (found === null) throw new Error(run.stderr.trim() || 'etcd is missing: install it with `apt-get install -y etcd-server`');
  }
  return found;
}

export interface TestEtcdOptions {
  /** Members of the cluster (default 1). */
  readonly members?: number;
  /** etcd's --quota-backend-bytes (default etcd's own, 2 GiB). */
  readonly quotaBytes?: number;
}

/** One etcd process of a test cluster. */
export class EtcdMember {
  readonly name: string;
  readonly endpoint: string;
  readonly #args: string[];
  readonly #binary: string;
  #child: ChildProcess | undefined;
  #output = '';

  constructor(binary: string, name: string, endpoint: string, args: string[]) {
    this.#binary = binary;
    this.name = name;
    this.endpoint = endpoint;
    this.#args = args;
  }

  get running(): boolean {
    return this.#child !== undefined && this.#child.exitCode === null && this.#child.signalCode === null;
  }

  get output(): string {
    return this.#output;
  }

  /** Starts the process (again) on its ports and data; does not wait for it to serve. */
  spawn(): void {
    if (this.running) return;
    const child = spawn(this.#binary, this.#args, { stdio: ['ignore', 'pipe', 'pipe'] });
    this.#child = child;
    const keep = (chunk: Buffer): void => {
      this.#output = (this.#output + chunk.toString()).slice(-20_000);
    };
    child.stdout!.on('data', keep);
    child.stderr!.on('data', keep);
  }

  /** Stops it (SIGKILL by default: the member vanishes as in a crash); its data stays. */
  async stop(signal: NodeJS.Signals = 'SIGKILL'): Promise<void> {
    const child = this.#child;
    if (child === undefined || !this.running) return;
    const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
    child.kill(signal);
    await exited;
  }

  /** SIGSTOP: the member hangs (its sockets stay open, nothing answers). */
  pause(): void {
    this.#child?.kill('SIGSTOP');
  }

  /** SIGCONT after pause(). */
  unpause(): void {
    this.#child?.kill('SIGCONT');
  }

  /** The v3 gateway's answer to a POST, or undefined when the member does not answer. */
  async gateway(path: string, body: unknown = {}): Promise<Record<string, unknown> | undefined> {
    try {
      const res = await fetch(`${this.endpoint}${path}`, {
        method: 'POST',
        body: JSON.stringify(body),
        signal: AbortSignal.timeout(1000),
      });
      return res.ok ? ((await res.json()) as Record<string, unknown>) : undefined;
    } catch {
      return undefined;
    }
  }
}

export class TestEtcd {
  readonly members: EtcdMember[];
  readonly #dirs: string[];

  private constructor(members: EtcdMember[], dirs: string[]) {
    this.members = members;
    this.#dirs = dirs;
  }

  /** The first member's client URL (the only one of a one-member etcd). */
  get endpoint(): string {
    return this.members[0]!.endpoint;
  }

  /** Every member's client URL, as `pdlink.store.etcd.endpoints` lists them. */
  get endpoints(): string[] {
    return this.members.map((m) => m.endpoint);
  }

  get running(): boolean {
    return this.members.every((m) => m.running);
  }

  /**
   * Starts an etcd (one member, or `members`) on free loopback ports; retries with other ports if taken.
   * @example const etcd = await TestEtcd.start({ members: 3 }); ...; await etcd.destroy();
   */
  static async start(options: TestEtcdOptions = {}): Promise<TestEtcd> {
    const binary = etcdBinary();
    const count = options.members ?? 1;
    let lastError: unknown;
    for (let attempt = 0; attempt < 5; attempt++) {
      // Below the kernel's ephemeral range (and the simulator's link ports, 20000 up): a member
      // restarted on its ports must not find one taken as some outgoing connection's source port.
      const base = 10_000 + Math.floor(Math.random() * 2_400) * 4;
      const names = Array.from({ length: count }, (_, i) => `pdlink-test-${i}`);
      const peer = (i: number): string => `http://127.0.0.1:${base + 2 * i + 1}`;
      const initialCluster = names.map((n, i) => `${n}=${peer(i)}`).join(',');
      const dirs = names.map(() => mkdtempSync(join(tmpdir(), 'pdlink-etcd-')));
      const members = names.map((name, i) => {
        const endpoint = `http://127.0.0.1:${base + 2 * i}`;
        const args = [
          '--name',
          name,
          '--data-dir',
          dirs[i]!,
          '--listen-client-urls',
          endpoint,
          '--advertise-client-urls',
          endpoint,
          '--listen-peer-urls',
          peer(i),
          '--initial-advertise-peer-urls',
          peer(i),
          '--initial-cluster',
          initialCluster,
          '--initial-cluster-state',
          'new',
          '--log-level',
          process.env['PDLINK_TEST_ETCD_LOG'] ?? 'warn',
          ...(options.quotaBytes === undefined ? [] : ['--quota-backend-bytes', String(options.quotaBytes)]),
        ];
        return new EtcdMember(binary, name, endpoint, args);
      });
      const etcd = new TestEtcd(members, dirs);
      try {
        await etcd.resume();
        return etcd;
      } catch (err) {
        lastError = err;
        await etcd.destroy();
      }
    }
    throw lastError;
  }

  /** Starts every member that is not running; resolves once the cluster has a leader and answers. */
  async resume(): Promise<void> {
    for (const m of this.members) m.spawn();
    await this.healthy();
  }

  /** Starts member `i` again after a stop and waits until the cluster (with it) answers. */
  async resumeMember(i: number): Promise<void> {
    const member = this.members[i]!;
    member.spawn();
    await this.healthy();
    if (!member.running) throw new Error(`etcd member ${member.name} exited:\n${member.output}`);
  }

  /** Resolves once every running member answers /health (the cluster has a leader). */
  async healthy(deadlineMs = 20_000): Promise<void> {
    await until(
      async () => {
        for (const m of this.members) {
          if (!m.running) continue;
          const ok = await fetch(`${m.endpoint}/health`, { signal: AbortSignal.timeout(1000) })
            .then((r) => r.ok)
            .catch(() => false);
          if (!ok) return undefined;
        }
        return true;
      },
      deadlineMs,
      () => `etcd did not become healthy:\n${this.members.map((m) => `${m.name}: ${m.output}`).join('\n')}`,
    );
  }

  /** Stops every member (SIGKILL by default); data stays for resume(). */
  async stop(signal: NodeJS.Signals = 'SIGKILL'): Promise<void> {
    await Promise.all(this.members.map((m) => m.stop(signal)));
  }

  /** Index of the member that leads the cluster now, as the members report it (undefined: none agrees). */
  async leaderIndex(): Promise<number | undefined> {
    const statuses = await Promise.all(this.members.map((m) => (m.running ? m.gateway('/v3/maintenance/status') : undefined)));
    const ids = statuses.map((s) => (s?.['header'] as { member_id?: string } | undefined)?.member_id);
    const leaders = new Set(statuses.flatMap((s) => (typeof s?.['leader'] === 'string' ? [s['leader']] : [])));
    if (leaders.size !== 1) return undefined;
    const leader = [...leaders][0];
    const index = ids.indexOf(leader);
    return index < 0 ? undefined : index;
  }

  /** The leases etcd holds now (ids as decimal strings). */
  async leases(): Promise<string[]> {
    for (const m of this.members) {
      if (!m.running) continue;
      const res = await m.gateway('/v3/lease/leases');
      if (res !== undefined) return ((res['leases'] as { ID: string }[] | undefined) ?? []).map((l) => l.ID);
    }
    throw new Error('no etcd member answered');
  }

  /** The lease key `key` (absolute) is bound to, or undefined when it does not exist or has none. */
  async leaseOf(key: string): Promise<string | undefined> {
    for (const m of this.members) {
      if (!m.running) continue;
      const res = await m.gateway('/v3/kv/range', { key: Buffer.from(key).toString('base64') });
      if (res === undefined) continue;
      const kv = (res['kvs'] as { lease?: string }[] | undefined)?.[0];
      return kv?.lease === undefined || kv.lease === '0' ? undefined : kv.lease;
    }
    throw new Error('no etcd member answered');
  }

  /** Revokes a lease by id, as `etcdctl lease revoke` does. */
  async revokeLease(id: string): Promise<void> {
    for (const m of this.members) {
      if (!m.running) continue;
      if ((await m.gateway('/v3/lease/revoke', { ID: id })) !== undefined) return;
    }
    throw new Error(`no etcd member revoked lease ${id}`);
  }

  /** The database size (bytes) member `i` reports. */
  async dbSize(i = 0): Promise<number> {
    const status = await this.members[i]!.gateway('/v3/maintenance/status');
    if (status === undefined) throw new Error(`etcd member ${i} did not answer its status`);
    return Number(status['dbSize']);
  }

  async destroy(): Promise<void> {
    await Promise.all(this.members.map((m) => m.stop()));
    for (const dir of this.#dirs) rmSync(dir, { recursive: true, force: true });
  }
}
