/**
 * Thousands of instance agents in one listener, for HA at MindIE's 4096-instance cap without 4096
 * processes: every agent has its own loopback address (127.1.x.y, all routed to this listener on
 * Linux) and answers the controller's two calls as a real agent would — `POST /v1/role/{role}` takes
 * the body (and counts it), `GET /v1/status` reports the role held, every posted peer linked, and
 * free slots and blocks (fixed, or moving as under load). An agent can be made to forget its role
 * (a restart) to change the cluster's state on purpose. It runs in a process of its own
 * (fake-agents-main.ts), so answering thousands of polls a second does not slow the test down; the
 * test drives it through `/_fake/*` on 127.0.0.1 (FakeAgentsClient).
 */
import type { Server } from 'bun';
import { spawn, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';

/** Agent `k` of `count`: its id, loopback address and role (the first half prefill). */
function layoutOf(k: number, count: number): { id: number; ip: string; role: 'prefill' | 'decode' } {
  const prefill = k < count / 2;
  return { id: prefill ? 1000 + k : 5000 + k, ip: `127.1.${k >> 8}.${k & 255}`, role: prefill ? 'prefill' : 'decode' };
}

/**
 * The agents' instances for a topology file (`instances`), roles fixed.
 * @example fakeAgentEntries({ count: 4096, devices: 8, modelName: 'm' }, port)
 */
export function fakeAgentEntries(options: FakeAgentsOptions, port: number): Record<string, unknown>[] {
  return Array.from({ length: options.count }, (_, k) => {
    const a = layoutOf(k, options.count);
    return {
      id: a.id,
      manage_url: `http://${a.ip}:${port}`,
      inference_url: `http://${a.ip}:${port + 1}`,
      model_name: options.modelName,
      server_ip: a.ip,
      devices: Array.from({ length: options.devices }, (_, d) => ({
        device_logical_id: String(d),
        device_ip: `10.${(k >> 8) + 1}.${k & 255}.${d + 1}`,
      })),
      role: a.role,
      static_info: {
        max_seq_len: 32768,
        max_output_len: 4096,
        total_slots_num: TOTAL_SLOTS,
        total_block_num: TOTAL_BLOCKS,
        block_size: 128,
      },
    };
  });
}

export interface FakeAgentsOptions {
  readonly count: number;
  readonly devices: number;
  readonly modelName: string;
  /** Free slots and blocks change with every status answer, as under request load (default false). */
  readonly busy?: boolean;
}

interface Agent {
  readonly id: number;
  readonly ip: string;
  readonly role: 'prefill' | 'decode';
  held: string | undefined;
  peers: string[];
  polls: number;
}

const TOTAL_SLOTS = 256;
const TOTAL_BLOCKS = 8192;

export class FakeAgents {
  readonly #server: Server<undefined>;
  readonly #agents: Agent[];
  readonly #byIp: Map<string, Agent>;
  readonly #options: FakeAgentsOptions;
  #busy: boolean;
  #posts = 0;

  private constructor(server: Server<undefined>, agents: Agent[], options: FakeAgentsOptions) {
    this.#server = server;
    this.#agents = agents;
    this.#byIp = new Map(agents.map((a) => [a.ip, a]));
    this.#options = options;
    this.#busy = options.busy === true;
  }

  /** Free slots and blocks move with every answer (as under request load) while set. */
  set busy(busy: boolean) {
    this.#busy = busy;
  }

  /**
   * Starts the listener on every address, port chosen by the system.
   * @example const agents = await FakeAgents.start({ count: 4096, devices: 8, modelName: 'm'.repeat(100) });
   */
  static start(options: FakeAgentsOptions): FakeAgents {
    const agents: Agent[] = Array.from({ length: options.count }, (_, k) => ({
      ...layoutOf(k, options.count),
      held: undefined,
      peers: [],
      polls: 0,
    }));
    let self: FakeAgents | undefined;
    const server = Bun.serve({
      hostname: '0.0.0.0',
      port: 0,
      fetch: (req) => self!.answer(req),
    });
    self = new FakeAgents(server, agents, options);
    return self;
  }

  /** Role posts accepted so far. */
  get rolePosts(): number {
    return this.#posts;
  }

  get port(): number {
    return this.#server.port!;
  }

  /** Agent `k` forgets its role, as a restarted agent does (the controller posts it again). */
  forget(k: number): void {
    const a = this.#agents[k]!;
    a.held = undefined;
    a.peers = [];
  }

  /** How many agents hold a role now. */
  holding(): number {
    return this.#agents.filter((a) => a.held !== undefined).length;
  }

  stop(): void {
    this.#server.stop(true);
  }

  answer(req: Request): Response | Promise<Response> {
    const control = this.#control(req);
    if (control !== undefined) return control;
    const host = (req.headers.get('host') ?? '').replace(/:\d+$/, '');
    const agent = this.#byIp.get(host);
    if (agent === undefined) return new Response('no such agent', { status: 404 });
    const path = new URL(req.url).pathname;
    if (req.method === 'GET' && path === '/v1/status') return Response.json(this.#status(agent));
    const role = /^\/v1\/role\/(prefill|decode)$/.exec(path)?.[1];
    if (req.method === 'POST' && role !== undefined) return this.#post(agent, role, req);
    return new Response('not found', { status: 404 });
  }

  /** The test's own calls: counts, a forgotten role, the busy switch. */
  #control(req: Request): Response | undefined {
    const url = new URL(req.url);
    if (!url.pathname.startsWith('/_fake/')) return undefined;
    if (url.pathname === '/_fake/counts') return Response.json({ posts: this.#posts, holding: this.holding() });
    if (url.pathname === '/_fake/forget') this.forget(Number(url.searchParams.get('k')));
    if (url.pathname === '/_fake/busy') this.busy = url.searchParams.get('on') === '1';
    return Response.json({ ok: true });
  }

  async #post(agent: Agent, role: string, req: Request): Promise<Response> {
    const body = (await req.json()) as { peers?: { server_ip?: string }[] };
    agent.held = role;
    agent.peers = (body.peers ?? []).flatMap((p) => (p.server_ip === undefined ? [] : [p.server_ip]));
    this.#posts += 1;
    return Response.json({ result: 'OK' });
  }

  #status(agent: Agent): unknown {
    agent.polls += 1;
    const used = this.#busy ? (agent.polls * 7 + agent.id) % 64 : 0;
    return {
      service: { roleStatus: agent.held === undefined ? 'RoleUnknown' : 'RoleReady', currentRole: agent.held ?? 'none', queuedPosts: 0 },
      linkStatus: { peers: agent.peers.map((target) => ({ target, device: 0, link: 'ok' })) },
      resource: {
        totalSlotsNum: TOTAL_SLOTS,
        availSlotsNum: TOTAL_SLOTS - used,
        totalBlockNum: TOTAL_BLOCKS,
        availBlockNum: TOTAL_BLOCKS - used * 16,
      },
    };
  }
}

/** The test's side of a fake-agents process. */
export class FakeAgentsClient {
  readonly #child: ChildProcess;
  readonly #options: FakeAgentsOptions;
  readonly port: number;

  private constructor(child: ChildProcess, options: FakeAgentsOptions, port: number) {
    this.#child = child;
    this.#options = options;
    this.port = port;
  }

  /**
   * Starts the agents in a process of their own.
   * @example const agents = await FakeAgentsClient.spawn({ count: 4096, devices: 8, modelName: 'm'.repeat(100) });
   */
  static async spawn(options: FakeAgentsOptions): Promise<FakeAgentsClient> {
    const child = spawn(process.execPath, [join(import.meta.dir, 'fake-agents-main.ts'), JSON.stringify(options)], {
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    const port = await new Promise<number>((resolve, reject) => {
      let out = '';
      child.stdout!.on('data', (chunk: Buffer) => {
        out += chunk.toString();
        const match = /fake agents listening on (\d+)/.exec(out);
        if (match !== null) resolve(Number(match[1]));
      });
      child.once('exit', (code) => reject(new Error(`fake agents exited (${code}): ${out}`)));
    });
    return new FakeAgentsClient(child, options, port);
  }

  entries(): Record<string, unknown>[] {
    return fakeAgentEntries(this.#options, this.port);
  }

  get count(): number {
    return this.#options.count;
  }

  /** Role posts accepted so far, and how many agents hold a role now. */
  async counts(): Promise<{ posts: number; holding: number }> {
    return (await (await fetch(`http://127.0.0.1:${this.port}/_fake/counts`)).json()) as { posts: number; holding: number };
  }

  /** Agent `k` forgets its role (a restart). */
  async forget(k: number): Promise<void> {
    await fetch(`http://127.0.0.1:${this.port}/_fake/forget?k=${k}`);
  }

  /** Free slots and blocks move with every answer while on. */
  async setBusy(on: boolean): Promise<void> {
    await fetch(`http://127.0.0.1:${this.port}/_fake/busy?on=${on ? 1 : 0}`);
  }

  stop(): void {
    this.#child.kill('SIGKILL');
  }
}
