/**
 * Faults a test can arm on a simulated engine through `POST /sim/faults` on its management
 * listener: answer the next N prefill (or decode) legs with an HTTP status, hold the next N
 * prefills for a while (so a test can act while P is busy), make the next N role switches last longer
 * (so a test can act while the engine switches), corrupt the KV bytes of the next N
 * prefills, or crash the process (SIGKILL, as an engine dies) on the next decode leg,
 * before its first byte or after K tokens. Each armed fault is used up by the requests it hits.
 */
import * as v from 'valibot';
import { errors } from '../../core/errors.ts';
import { parseOrRefuse } from '../../schema/issues.ts';

const Count = v.pipe(
  v.number('must be an integer'),
  v.integer('must be an integer'),
  v.minValue(1, 'must be ≥ 1'),
  v.maxValue(1_000_000, 'must be ≤ 1000000'),
);
const Status = v.pipe(
  v.number('must be an integer'),
  v.integer('must be an integer'),
  v.minValue(400, 'must be an HTTP error status in [400, 599]'),
  v.maxValue(599, 'must be an HTTP error status in [400, 599]'),
);
/** Make the next `count` of something last `ms` longer. */
const StallFault = v.strictObject({
  ms: v.pipe(
    v.number('must be a number of milliseconds'),
    v.integer('must be an integer'),
    v.minValue(1, 'must be ≥ 1'),
    v.maxValue(600_000, 'must be ≤ 600000'),
  ),
  count: v.optional(Count, 1),
});

const StatusFault = v.strictObject({ status: Status, count: v.optional(Count, 1) });

/** Body of `POST /sim/faults`; every key optional, unknown keys refused (a typo must not pass silently). */
export const FaultsBody = v.strictObject({
  /** Answer the next `count` prefill legs (requests asking to keep the KV cache) with `status`. */
  prefill_status: v.optional(StatusFault),
  /** Answer the next `count` decode legs (requests carrying P's kv_transfer_params) with `status`. */
  decode_status: v.optional(StatusFault),
  /** Hold the next `count` prefill legs `ms` longer (abortable, like the prefill itself). */
  stall_prefill: v.optional(StallFault),
  /** Make the next `count` role switches last `ms` longer (a test can act while the engine switches). */
  stall_role_switch: v.optional(StallFault),
  /** Flip one byte of the KV cache the next `count` prefills write, after writing it. */
  corrupt_kv: v.optional(v.strictObject({ count: v.optional(Count, 1) })),
  /** Die (SIGKILL) in the next decode leg after sending `after_tokens` tokens; 0 = before the first byte. */
  decode_crash: v.optional(
    v.strictObject({ after_tokens: v.pipe(v.number('must be an integer'), v.integer('must be an integer'), v.minValue(0, 'must be ≥ 0')) }),
  ),
});

export type FaultsInput = v.InferOutput<typeof FaultsBody>;

interface StatusArm {
  status: number;
  remaining: number;
}

/** The armed faults of one engine. */
export class FaultPlan {
  #prefill: StatusArm | undefined;
  #decode: StatusArm | undefined;
  #corrupt = 0;
  #stall: { ms: number; remaining: number } | undefined;
  #switchStall: { ms: number; remaining: number } | undefined;
  #crashAfter: number | undefined;

  /**
   * Arms the faults of a validated body, replacing those of the same kind.
   * @example plan.arm(parseFaults({ prefill_status: { status: 500 } }))
   */
  arm(input: FaultsInput): void {
    if (input.prefill_status !== undefined) this.#prefill = { status: input.prefill_status.status, remaining: input.prefill_status.count };
    if (input.decode_status !== undefined) this.#decode = { status: input.decode_status.status, remaining: input.decode_status.count };
    if (input.corrupt_kv !== undefined) this.#corrupt = input.corrupt_kv.count;
    if (input.stall_prefill !== undefined) this.#stall = { ms: input.stall_prefill.ms, remaining: input.stall_prefill.count };
    if (input.stall_role_switch !== undefined)
      this.#switchStall = { ms: input.stall_role_switch.ms, remaining: input.stall_role_switch.count };
    if (input.decode_crash !== undefined) this.#crashAfter = input.decode_crash.after_tokens;
  }

  /** Disarms everything. */
  clear(): void {
    this.#prefill = undefined;
    this.#decode = undefined;
    this.#corrupt = 0;
    this.#stall = undefined;
    this.#switchStall = undefined;
    this.#crashAfter = undefined;
  }

  /** Extra milliseconds this prefill must take (uses up one shot); 0 = none. */
  takeStall(): number {
    const stall = this.#stall;
    if (stall === undefined) return 0;
    stall.remaining--;
    if (stall.remaining === 0) this.#stall = undefined;
    return stall.ms;
  }

  /** Extra milliseconds this role switch must take (uses up one shot); 0 = none. */
  takeSwitchStall(): number {
    const stall = this.#switchStall;
    if (stall === undefined) return 0;
    stall.remaining--;
    if (stall.remaining === 0) this.#switchStall = undefined;
    return stall.ms;
  }

  /** The status the next prefill leg must answer with, using up one shot; undefined = behave. */
  takePrefillStatus(): number | undefined {
    return take(this.#prefill, () => (this.#prefill = undefined));
  }

  /** Same for a decode leg. */
  takeDecodeStatus(): number | undefined {
    return take(this.#decode, () => (this.#decode = undefined));
  }

  /** True when this prefill must corrupt its KV bytes (uses up one shot). */
  takeCorruption(): boolean {
    if (this.#corrupt === 0) return false;
    this.#corrupt--;
    return true;
  }

  /** Tokens after which this decode leg dies (uses up the fault); undefined = behave. */
  takeCrash(): number | undefined {
    const after = this.#crashAfter;
    this.#crashAfter = undefined;
    return after;
  }

  /** What is armed, in the wire shape of `GET /sim/faults`. */
  toJSON(): Record<string, unknown> {
    return {
      prefill_status: this.#prefill === undefined ? null : { status: this.#prefill.status, count: this.#prefill.remaining },
      decode_status: this.#decode === undefined ? null : { status: this.#decode.status, count: this.#decode.remaining },
      corrupt_kv: this.#corrupt === 0 ? null : { count: this.#corrupt },
      stall_prefill: this.#stall === undefined ? null : { ms: this.#stall.ms, count: this.#stall.remaining },
      stall_role_switch: this.#switchStall === undefined ? null : { ms: this.#switchStall.ms, count: this.#switchStall.remaining },
      decode_crash: this.#crashAfter === undefined ? null : { after_tokens: this.#crashAfter },
    };
  }
}

/**
 * Validates a `POST /sim/faults` body; a 422 PdlinkError names every offending field.
 * @example plan.arm(parseFaults(await readJsonRequest(request, { limitBytes: 4096 })))
 */
export function parseFaults(body: unknown): FaultsInput {
  return parseOrRefuse(FaultsBody, body, errors.unprocessable);
}

function take(arm: StatusArm | undefined, disarm: () => void): number | undefined {
  if (arm === undefined) return undefined;
  arm.remaining--;
  if (arm.remaining === 0) disarm();
  return arm.status;
}
