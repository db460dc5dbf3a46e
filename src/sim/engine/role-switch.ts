/**
 * What a role change costs a simulated engine, modelled on a real one's: the weights stay loaded,
 * but the engine reconfigures for the other stage, so for `roleSwitchMs` it serves nothing (a
 * request that arrives is refused with 503, as an engine that is not ready refuses it, and its
 * health check fails), and its KV cache is dropped (every block, whoever held it, and the prefix
 * cache, whose subscribers hear AllBlocksCleared), which ends every leg still running (a request the
 * controller did not drain first is cut, as the sequence it held is gone). The agent awaits this between unlinking the old
 * role's links and making the new ones, so its status reads RoleSwitching all along.
 */
import type { BlockPool } from './kv/block-pool.ts';
import type { PrefixCache } from './kv/prefix-cache.ts';
import type { FaultPlan } from './faults.ts';
import { SimError } from './http/sim-error.ts';
import type { SimRole } from './types.ts';

/** The parts of an engine a role change touches. */
export interface SwitchingEngine {
  role: SimRole;
  readonly pools: ReadonlyMap<string, BlockPool>;
  readonly prefixCache: PrefixCache;
  /** A `stall_role_switch` fault makes a switch last longer. */
  readonly faults: FaultPlan;
  /** Forgets which prefills' blocks it kept for decoders (they are gone). */
  forgetExports(): void;
}

export class RoleSwitch {
  readonly #ms: number;
  readonly #sleep: (ms: number) => Promise<void>;
  #switchingTo: SimRole | undefined;
  #switches = 0;
  /** Aborted by each switch: the legs running when the KV cache is dropped cannot go on. */
  #epoch = new AbortController();

  /**
   * @example const roleSwitch = new RoleSwitch(2000);
   */
  constructor(ms: number, sleep: (ms: number) => Promise<void> = (ms) => new Promise((resolve) => setTimeout(resolve, ms))) {
    this.#ms = ms;
    this.#sleep = sleep;
  }

  /** The role being switched to, while a switch runs. */
  get switchingTo(): SimRole | undefined {
    return this.#switchingTo;
  }

  /** Role changes done since the engine started. */
  get switches(): number {
    return this.#switches;
  }

  /**
   * Changes `engine` to role `to`: nothing when it already has it (its first role post names the
   * role it was started with), else the KV cache is dropped and the engine serves nothing for the
   * switch time.
   * @example await roleSwitch.run(engine, 'decode');
   */
  async run(engine: SwitchingEngine, to: SimRole): Promise<void> {
    if (engine.role === to && this.#switchingTo === undefined) return;
    this.#switchingTo = to;
    try {
      this.#epoch.abort(new Error(`the engine switched its role to ${to}: its KV cache was dropped`));
      this.#epoch = new AbortController();
      for (const pool of engine.pools.values()) pool.clear();
      engine.forgetExports();
      engine.prefixCache.clear();
      const ms = this.#ms + engine.faults.takeSwitchStall();
      if (ms > 0) await this.#sleep(ms);
      engine.role = to;
      this.#switches++;
    } finally {
      this.#switchingTo = undefined;
    }
  }

  /**
   * The signal a leg runs under: its request's, and the next switch's (which ends every leg running
   * then, as dropping the KV cache ends the sequences it held).
   * @example runDecode(engine, request, kv, requestId, engine.roleSwitch.signalFor(signal));
   */
  signalFor(request: AbortSignal): AbortSignal {
    return AbortSignal.any([request, this.#epoch.signal]);
  }

  /**
   * Throws the 503 a request gets while a switch runs.
   * @example roleSwitch.refuseWhileSwitching();
   */
  refuseWhileSwitching(): void {
    if (this.#switchingTo === undefined) return;
    throw SimError.server(503, `the engine is switching its role to ${this.#switchingTo} and serves nothing until it is done`);
  }
}
