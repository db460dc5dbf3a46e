/**
 * One simulated inference engine with a pull-mode KV connector, the way a vLLM instance behaves
 * in disaggregated serving: what it does with a request depends on the request's
 * `kv_transfer_params` — keep the prompt's blocks for a remote decoder (the prefill leg), pull them
 * from a remote prefiller (the decode leg), or serve the request alone. The `role` is what the
 * Controller made it; it labels the engine and its status but, as in vLLM, the request decides.
 */
import { BlockPool } from './kv/block-pool.ts';
import { FaultPlan } from './faults.ts';
import { PrefixCache, type PrefixCacheStats } from './kv/prefix-cache.ts';
import { PrefillQueue } from './legs/prefill-queue.ts';
import { SIM_CACHE_ID, type SimKv } from './kv/kv-port.ts';
import { ReleaseNotifier } from './kv/release-notifier.ts';
import type { ClientTlsOptions } from '../../platform/tls-options.ts';
import { SharedScratch } from './kv/scratch.ts';
import { BootstrapRooms } from './legs/rooms.ts';
import { finish, RequestLog, type Leg } from './request-log.ts';
import type { SimKind } from './legs/request.ts';
import { readSimRequest } from './legs/request.ts';
import { SimError } from './http/sim-error.ts';
import { runPrefill } from './legs/prefill.ts';
import { runDecode } from './legs/decode.ts';
import { runLocal } from './legs/local.ts';
import { RoleSwitch } from './role-switch.ts';
import type { KvNotifyAddress, LegEngine, SimDevice, SimEngineOptions, SimRole } from './types.ts';

export type { KvNotifyAddress, SimDevice, SimEngineOptions, SimRole } from './types.ts';

/**
 * Requests the simulator reports it can run at once: it has no real limit, so this is the number
 * a Coordinator is told (the same as the cluster launcher's refresh).
 */
export const SIM_TOTAL_SLOTS = 256;

/** What the engine tells its agent for the status's `resource` block (MindIE's names). */
export interface SimResources {
  readonly totalSlotsNum: number;
  readonly availSlotsNum: number;
  readonly totalBlockNum: number;
  readonly availBlockNum: number;
}

export interface SimStats {
  readonly role: SimRole;
  /** Role changes done, and the role being switched to (null when none runs). */
  readonly role_switches: number;
  readonly switching_to: SimRole | null;
  readonly model: string;
  readonly requests: {
    readonly prefill: number;
    readonly decode: number;
    readonly local: number;
    readonly aborted: number;
    readonly failed: number;
  };
  readonly kv: {
    readonly blocks_total: number;
    readonly blocks_used: number;
    readonly held_requests: number;
    readonly leases_expired: number;
    readonly bytes_pulled: number;
    readonly blocks_pulled: number;
    readonly verify_failures: number;
    /**
     * Decoders' "done" notices for prefills whose blocks this engine no longer held (an earlier
     * notice or the lease had freed them): a decoder pulled blocks that were no longer its prompt's.
     */
    readonly stale_releases: number;
  };
  readonly prefix_cache: PrefixCacheStats;
}

export class SimEngine implements LegEngine {
  readonly options: SimEngineOptions;
  readonly faults = new FaultPlan();
  readonly log = new RequestLog();
  /** Notices to prefillers that this engine (as a decoder) is done with their blocks. */
  readonly releases: ReleaseNotifier;
  /** Shared buffers that carry KV bytes to the transfer workers. */
  readonly scratch = new SharedScratch();
  /** SGLang's bootstrap rooms (sglang.ts). */
  readonly rooms = new BootstrapRooms();
  /** One block pool per device, by endpoint. */
  readonly pools: ReadonlyMap<string, BlockPool>;
  role: SimRole;
  notifyAddress: KvNotifyAddress | undefined;
  #nextDevice = 0;
  #seq = 0;
  /** Prefill id → device endpoint whose pool holds it. */
  readonly #exported = new Map<string, string>();
  readonly counters = { bytesPulled: 0, blocksPulled: 0, verifyFailures: 0, staleReleases: 0 };
  readonly prefixCache: PrefixCache;
  readonly prefillQueue = new PrefillQueue();
  generating = 0;
  /** A role change in progress refuses requests (role-switch.ts). */
  readonly roleSwitch: RoleSwitch;

  /**
   * An engine over the given KV runtime; call `start()` to register its caches.
   * @example const engine = new SimEngine({ role: 'prefill', model: 'sim', devices, kv, ...SIM_DEFAULTS });
   */
  constructor(options: SimEngineOptions) {
    this.options = options;
    this.role = options.role;
    this.roleSwitch = new RoleSwitch(options.roleSwitchMs ?? 0);
    this.releases = new ReleaseNotifier(undefined, options.notifyTls);
    this.prefixCache = new PrefixCache(options.prefixCacheBlocks ?? options.numBlocks * options.devices.length);
    this.pools = new Map(
      options.devices.map((d) => [
        d.endpoint,
        new BlockPool({
          numBlocks: options.numBlocks,
          onExpire: (owner) => this.#exported.delete(owner),
        }),
      ]),
    );
  }

  /**
   * Registers one KV cache of `numBlocks` blocks on every device (before any link, so peers see it).
   * @example await engine.start();
   */
  async start(): Promise<void> {
    for (const d of this.options.devices)
      await this.options.kv.register(d.endpoint, SIM_CACHE_ID, this.options.numBlocks, this.options.blockBytes);
  }

  /**
   * Serves one inference request; always resolves with the HTTP response.
   * @example return engine.handle('chat', body, requestId, c.req.raw.signal);
   */
  async handle(kind: SimKind, body: unknown, requestId: string, signal: AbortSignal): Promise<Response> {
    try {
      this.roleSwitch.refuseWhileSwitching();
      const request = readSimRequest(kind, body, this.options.tokenizer);
      if (request.model !== this.options.model) {
        throw new SimError(404, `The model \`${request.model}\` does not exist.`, 'NotFoundError', 'model');
      }
      const needed = request.tokens.length + (request.kv.kind === 'export' ? 1 : request.maxTokens);
      if (needed > this.options.maxModelLen) {
        throw SimError.badRequest(
          `This model's maximum context length is ${this.options.maxModelLen} tokens. However, you requested ${needed} tokens (${request.tokens.length} in the prompt, ${needed - request.tokens.length} in the completion). Please reduce the length of the prompt or completion.`,
          kind === 'chat' ? 'messages' : 'prompt',
        );
      }
      // A role switch ends the legs running when it drops the KV cache (role-switch.ts).
      const legSignal = this.roleSwitch.signalFor(signal);
      if (request.kv.kind === 'export') return await runPrefill(this, request, requestId, legSignal);
      if (request.kv.kind === 'import') return await runDecode(this, request, request.kv, requestId, legSignal);
      return await runLocal(this, request, requestId, legSignal);
    } catch (err) {
      if (err instanceof SimError) {
        // Refused before a leg began: still recorded, so a test can see which engine said no.
        const record = this.log.start({ requestId, kind, leg: legOf(body), stream: false, promptTokens: 0 });
        finish(record, 'error', err.status, err.message);
        return err.toResponse(requestId);
      }
      console.error('pdlink sim-engine: request failed', err);
      return SimError.server(500, err instanceof Error ? err.message : String(err)).toResponse(requestId);
    }
  }

  /**
   * The agent changes the engine's role (its role-switch hook): KV cache dropped, nothing served meanwhile.
   * @example agent.role.onRoleSwitch((_from, to) => engine.switchRole(to));
   */
  switchRole(to: SimRole): Promise<void> {
    return this.roleSwitch.run(this, to);
  }

  /** The blocks kept for decoders are gone (a role switch dropped them). */
  forgetExports(): void {
    this.#exported.clear();
  }

  /** The next device for a prefill (round robin, so both devices' caches are used). */
  nextDevice(): SimDevice {
    const devices = this.options.devices;
    const device = devices[this.#nextDevice % devices.length]!;
    this.#nextDevice++;
    return device;
  }

  /** A request-unique key for the block pools (one client id may reach an engine twice). */
  nextId(requestId: string): string {
    this.#seq++;
    return `${requestId}#${this.#seq}`;
  }

  /** Notes that a prefill's blocks live on `endpoint`, so a release finds them. */
  noteExported(prefillId: string, endpoint: string): void {
    this.#exported.set(prefillId, endpoint);
  }

  /**
   * Frees the blocks a prefill kept for its decoder; returns how many were freed (0: unknown or gone).
   * @example engine.releaseExport('req-1#3')
   */
  releaseExport(prefillId: string): number {
    const endpoint = this.#exported.get(prefillId);
    this.rooms.released(prefillId);
    if (endpoint === undefined) return 0;
    this.#exported.delete(prefillId);
    return this.pools.get(endpoint)?.release(prefillId) ?? 0;
  }

  /**
   * A decoder's notice that it is done with a prefill's blocks (`POST /sim/kv/release`): frees
   * them, and counts a notice for blocks no longer held (see SimStats' `stale_releases`).
   * @example engine.releaseNotice('req-1#3')
   */
  releaseNotice(prefillId: string): number {
    if (!this.#exported.has(prefillId)) this.counters.staleReleases++;
    return this.releaseExport(prefillId);
  }

  /** Counters for `GET /sim/status` and the demo. */
  stats(): SimStats {
    const records = this.log.list();
    const count = (pred: (r: (typeof records)[number]) => boolean): number => records.reduce((n, r) => n + (pred(r) ? 1 : 0), 0);
    const pools = [...this.pools.values()];
    return {
      role: this.role,
      role_switches: this.roleSwitch.switches,
      switching_to: this.roleSwitch.switchingTo ?? null,
      model: this.options.model,
      requests: {
        prefill: count((r) => r.leg === 'prefill'),
        decode: count((r) => r.leg === 'decode'),
        local: count((r) => r.leg === 'local'),
        aborted: count((r) => r.outcome === 'aborted'),
        failed: count((r) => r.outcome === 'error'),
      },
      kv: {
        blocks_total: pools.reduce((n, p) => n + p.size, 0),
        blocks_used: pools.reduce((n, p) => n + p.used, 0),
        held_requests: pools.reduce((n, p) => n + p.owners, 0),
        leases_expired: pools.reduce((n, p) => n + p.expired, 0),
        bytes_pulled: this.counters.bytesPulled,
        blocks_pulled: this.counters.blocksPulled,
        verify_failures: this.counters.verifyFailures,
        stale_releases: this.counters.staleReleases,
      },
      prefix_cache: this.prefixCache.stats(),
    };
  }

  /**
   * Free and total slots (legs running) and KV blocks (held for decoders included), as the
   * agent's status reports them.
   * @example agent.reportResources(() => engine.resources());
   */
  resources(): SimResources {
    const running = this.log.list().reduce((n, r) => n + (r.outcome === 'running' ? 1 : 0), 0);
    const pools = [...this.pools.values()];
    const total = pools.reduce((n, p) => n + p.size, 0);
    return {
      totalSlotsNum: SIM_TOTAL_SLOTS,
      availSlotsNum: Math.max(0, SIM_TOTAL_SLOTS - running),
      totalBlockNum: total,
      availBlockNum: total - pools.reduce((n, p) => n + p.used, 0),
    };
  }

  /** Frees every block and lease timer (the process is stopping). */
  close(): void {
    for (const pool of this.pools.values()) pool.clear();
  }
}

/** The leg a request asks for, read loosely (the body may be invalid). */
function legOf(body: unknown): Leg {
  const params = typeof body === 'object' && body !== null ? (body as { kv_transfer_params?: unknown }).kv_transfer_params : undefined;
  if (typeof params !== 'object' || params === null) return 'local';
  if ((params as { do_remote_decode?: unknown }).do_remote_decode === true) return 'prefill';
  if ((params as { do_remote_prefill?: unknown }).do_remote_prefill === true) return 'decode';
  return 'local';
}
