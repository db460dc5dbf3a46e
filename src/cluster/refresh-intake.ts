/**
 * The Coordinator's intake of the Controller's snapshots: what `POST /v1/instances/refresh` does
 * with a body once it is read, and the state that makes the common case cheap. A refresh is
 * all-or-nothing: any problem throws the 400 naming every issue and leaves the registry untouched.
 *
 * The Controller resends its snapshot every second, most often unchanged. A body equal, character
 * for character, to the last one this intake applied, while the registry still holds what it
 * applied (nothing else applied a snapshot since), would change nothing and get the same verdict:
 * it is accepted again without being parsed or checked, and the registry asked only to count it.
 * Its addresses are checked again only if the policy changed since (the process learnt of
 * listeners of its own). Only the text is kept: the parsed value would stay alive until the next
 * refresh, which for a large snapshot cost the garbage collector more than this saves.
 *
 * Between two changes of the topology, the Controller's snapshots move only loads: a body that is
 * the last accepted text with only loads changed is read by the template of that text (see
 * schema/refresh-loads.ts) and applied as loads alone. The template is made after an apply that
 * moved only loads (the topology held still), from that body's text, and kept while this intake's
 * applies move only loads; any other apply drops it.
 */
import type { Registry } from 'prom-client';
import type { InstanceAddressPolicy } from '../net/address-policy.ts';
import { errors, type FieldIssue, PdlinkError } from '../core/errors.ts';
import { parseRefresh } from '../schema/refresh.ts';
import { isPlainSnapshot, parseRefreshText } from '../schema/refresh-plain.ts';
import { LoadsTemplate } from '../schema/refresh-loads.ts';
import type { RegistryDiff } from './instance.ts';
import type { ClusterRegistry } from './registry.ts';
import { refreshMetrics } from './registry-metrics.ts';

/** A body's text, the value it parsed to, and whether the loads template was tried on it and missed. */
interface ParsedBody {
  readonly text: string;
  readonly value: unknown;
  readonly missed: boolean;
}

export interface RefreshIntakeDeps {
  readonly registry: ClusterRegistry;
  /** Registry for `pdlink_refresh_total`, `pdlink_refresh_apply_seconds`, `pdlink_instances`. */
  readonly metrics: Registry;
  /** Instance addresses the proxy may be sent to (`pdlink.allowed_instance_networks`, the defaults, not itself). */
  readonly addressPolicy?: InstanceAddressPolicy | undefined;
}

/** What a body's check decided, before anything is applied. */
interface Checked {
  /** The snapshot to apply; undefined: apply again what the registry holds (with `resent`'s loads, if any). */
  readonly snapshot: ReturnType<typeof parseRefresh> | undefined;
  readonly resent: Unparsed | undefined;
  readonly started: number;
  /** The policy generation the addresses were found acceptable under. */
  readonly checkedAt: number;
}

export class RefreshIntake {
  readonly #registry: ClusterRegistry;
  readonly #policy: InstanceAddressPolicy | undefined;
  readonly #metrics: ReturnType<typeof refreshMetrics>;
  #acceptedText: string | undefined;
  /** The registry's generation after this intake's last apply, and the policy its addresses passed. */
  #heldGeneration = -1;
  #heldPolicy = -1;
  #template: LoadsTemplate | undefined;
  /**
   * Bodies in a row that moved only loads but missed the template (written another way). It is made
   * anew from the second: a Controller that now writes its snapshots another way gets a template of
   * that way, while one that alternates two ways does not have one made at every refresh.
   */
  #missesInRow = 0;
  #parsed: ParsedBody | undefined;

  /** @example const intake = new RefreshIntake({ registry, metrics }); */
  constructor(deps: RefreshIntakeDeps) {
    this.#registry = deps.registry;
    this.#policy = deps.addressPolicy;
    this.#metrics = refreshMetrics(deps.metrics, deps.registry);
  }

  /**
   * The body reader's parse step: a body's text to the value `accept` takes (which, for a resent
   * body or one with only loads changed, is not a parse at all).
   * @example const read = jsonRequestReader({ limitBytes, parse: intake.parse });
   */
  readonly parse = (text: string): unknown => {
    if (text === this.#acceptedText && this.#holdsAccepted()) return new Unparsed(text, undefined, undefined);
    let missed = false;
    if (this.#template !== undefined && this.#holdsAccepted()) {
      const loads = this.#template.read(text);
      if (loads !== undefined) return new Unparsed(text, loads, this.#template);
      missed = true;
    }
    const value = parseRefreshText(text);
    this.#parsed = { text, value, missed };
    return value;
  };

  /**
   * Checks and applies a body `parse` returned; throws the 400 (counted as refused) when it is not
   * a valid snapshot, and changes nothing then.
   * @example intake.accept(intake.parse(text));
   */
  accept(body: unknown): void {
    let checked: Checked;
    try {
      checked = this.#check(body);
    } catch (error) {
      this.refused(error);
      throw error;
    }
    this.#apply(checked);
  }

  /** Counts a body refused before it could be checked (too large, unreadable) or by its check. */
  refused(error: unknown): void {
    this.#parsed = undefined;
    this.#metrics.refreshed(error instanceof PdlinkError && error.code === 'payload_too_large' ? 'too_large' : 'invalid');
  }

  #holdsAccepted(): boolean {
    return this.#registry.generation === this.#heldGeneration;
  }

  /** The snapshot's own check (a fast path for valid bodies, then Valibot to explain). */
  #check(body: unknown): Checked {
    const started = performance.now();
    const policy = this.#policy;
    const checkedAt = policy?.generation ?? -1;
    if (body instanceof Unparsed) {
      // Loads read by a template only count while that template is the one kept: an apply between
      // the read and now that changed more than loads dropped it.
      if (this.#holdsAccepted() && (body.loads === undefined || body.template === this.#template)) {
        if (policy !== undefined && policy.generation !== this.#heldPolicy) refuseAddresses(policy, this.#registry.all(), undefined);
        return { snapshot: undefined, resent: body, started, checkedAt };
      }
      // Another refresh was applied since this body was read: it is parsed after all.
      const value = parseRefreshText(body.text);
      this.#parsed = { text: body.text, value, missed: true };
      body = value;
    }
    const snapshot = parseRefresh(body);
    if (policy !== undefined) {
      // What the registry holds passed these checks under this policy when nothing else applied a
      // snapshot since this intake's last: an instance listed again at the address it has there is
      // not asked about again (a refresh that moved only loads asks about none).
      const held = this.#holdsAccepted() && policy.generation === this.#heldPolicy ? this.#registry : undefined;
      refuseAddresses(policy, snapshot.instances, held);
    }
    return { snapshot, resent: undefined, started, checkedAt };
  }

  #apply({ snapshot, resent, started, checkedAt }: Checked): void {
    const registry = this.#registry;
    if (snapshot === undefined) {
      const loads = resent!.loads;
      if (loads === undefined) {
        registry.repeat();
      } else {
        registry.applyLoads(loads);
        this.#acceptedText = resent!.text;
        this.#missesInRow = 0;
      }
    } else {
      // `valid`: the template describes what the registry holds (nothing else applied a snapshot
      // since this intake's last apply).
      const ours = this.#parsed !== undefined && this.#parsed.value === snapshot ? this.#parsed : undefined;
      const valid = this.#template !== undefined && this.#holdsAccepted();
      const diff = registry.apply(snapshot);
      // Another request may have been parsed since this one was: then no text is kept.
      this.#acceptedText = ours?.text;
      if (!movedOnlyLoads(diff) || ours === undefined || !isPlainSnapshot(snapshot)) {
        this.#template = undefined;
        this.#missesInRow = 0;
      } else if (!valid || (ours.missed && ++this.#missesInRow >= 2)) {
        // Made when there was none, or anew after misses in a row; a text that cannot be
        // templated leaves a valid one as it was.
        this.#template = LoadsTemplate.of(ours.text, snapshot) ?? (valid ? this.#template : undefined);
        this.#missesInRow = 0;
      }
    }
    this.#heldGeneration = registry.generation;
    this.#heldPolicy = checkedAt;
    this.#parsed = undefined;
    this.#metrics.applied(
      (performance.now() - started) / 1000,
      snapshot !== undefined ? 'parsed' : resent!.loads === undefined ? 'resent' : 'loads',
    );
    this.#metrics.refreshed('ok');
  }
}

/**
 * A body not parsed: equal to the last one accepted (no loads), or that text with only loads
 * changed, read by `template`.
 */
class Unparsed {
  constructor(
    readonly text: string,
    readonly loads: Uint32Array | undefined,
    readonly template: LoadsTemplate | undefined,
  ) {}
}

/** Whether an apply changed nothing but free slots and blocks, in place (see ClusterRegistry.apply). */
function movedOnlyLoads(diff: RegistryDiff): boolean {
  if (diff.added.length > 0 || diff.removed.length > 0) return false;
  for (const { before, after } of diff.updated) if (before !== after) return false;
  return true;
}

/**
 * Throws the 400 naming every instance whose address the policy refuses; instances `held` holds
 * at the same address (checked when it took them, under the same policy) are not asked about.
 * A plain loop: a closure and an array per instance were a tenth of a large refresh's time.
 */
function refuseAddresses(
  policy: InstanceAddressPolicy,
  instances: readonly { readonly id: number; readonly ip: string; readonly port: string | number }[],
  held: ClusterRegistry | undefined,
): void {
  let refused: FieldIssue[] | undefined;
  for (let i = 0; i < instances.length; i++) {
    const { id, ip, port } = instances[i]!;
    if (held !== undefined) {
      const before = held.get(id);
      if (before !== undefined && typeof port === 'string' && before.isAt(ip, port)) continue;
    }
    const why = policy.refusal(ip, port);
    if (why !== undefined) (refused ??= []).push({ path: `instances[${i}].ip`, message: `${ip}:${port}: ${why}` });
  }
  if (refused !== undefined) throw errors.invalidBody(refused);
}
