/**
 * Admission's settings as the rest of admission reads them: the file's `pdlink.admission` section
 * (or the same object from a gateway embedding pdlink) checked once and turned into class indices,
 * tenant policies and plain limits, so nothing per request looks a name up twice.
 */
import { errors } from '../core/errors.ts';
import { ADMISSION_LIMITS, AdmissionSection, DEFAULT_CLASS_NAMES } from '../schema/admission-config.ts';
import { parseOrRefuse } from '../schema/issues.ts';

/** Default wait of each default class: an interactive user gives up sooner than a batch job. */
export const DEFAULT_QUEUE_TIMEOUT_MS: Readonly<Record<string, number>> = { interactive: 10_000, batch: 60_000 };
/** Wait of a configured class that names none. */
export const FALLBACK_QUEUE_TIMEOUT_MS = 30_000;
export const DEFAULT_TENANT_HEADER = 'x-pdlink-tenant';
export const DEFAULT_CLASS_HEADER = 'x-pdlink-priority';

export interface ClassPolicy {
  readonly name: string;
  /** 0 is the highest class. */
  readonly index: number;
  /** How long a request of this class may wait; 0 = refused at once when there is no room. */
  readonly queueTimeoutMs: number;
}

export interface TenantPolicy {
  readonly weight: number;
  /** The class of its requests that ask for none. */
  readonly classIndex: number;
  /** The highest class (lowest index) its requests may ask for. */
  readonly maxClassIndex: number;
}

/** The per-stage limits past which an instance counts as full; undefined = no such limit. */
export interface StageLimits {
  readonly prefillInFlight?: number;
  readonly prefillQueuedTokens?: number;
  readonly decodeInFlight?: number;
  /** Share of a D's KV blocks in use, in (0, 1]. */
  readonly decodeKvUsage?: number;
}

export interface AdmissionSettings {
  readonly enabled: boolean;
  /** Highest first. */
  readonly classes: readonly ClassPolicy[];
  /** Policy of a tenant the file does not name. */
  readonly defaultTenant: TenantPolicy;
  readonly tenants: ReadonlyMap<string, TenantPolicy>;
  readonly tenantHeader: string;
  readonly classHeader: string;
  readonly maxQueued: number;
  readonly maxQueuedBytes: number;
  readonly preemption: boolean;
  readonly retryAfterSeconds: number;
  readonly stages: StageLimits;
}

/**
 * Checks the section and resolves every default; `at` prefixes the paths of its errors.
 * @throws PdlinkError `config_invalid` naming each wrong key, e.g. `pdlink.admission.tenants.bulk.class`.
 * @example const settings = resolveAdmissionSettings(file.pdlink?.admission);
 */
export function resolveAdmissionSettings(section: unknown = {}, at = 'pdlink.admission'): AdmissionSettings {
  const own = parseOrRefuse(AdmissionSection, section ?? {}, (issues) => errors.configInvalid(issues, at), { at, object: true });
  const names = own.classes?.map((c) => c.name) ?? DEFAULT_CLASS_NAMES;
  const classes = names.map((name, index): ClassPolicy => ({
    name,
    index,
    queueTimeoutMs: own.classes?.[index]?.queue_timeout_ms ?? DEFAULT_QUEUE_TIMEOUT_MS[name] ?? FALLBACK_QUEUE_TIMEOUT_MS,
  }));
  const indexOf = (name: string): number => names.indexOf(name);
  const defaultClass = own.default_class === undefined ? 0 : indexOf(own.default_class);
  const tenants = new Map<string, TenantPolicy>();
  for (const [tenant, entry] of Object.entries(own.tenants ?? {})) {
    const classIndex = entry.class === undefined ? defaultClass : indexOf(entry.class);
    tenants.set(tenant, {
      weight: entry.weight ?? ADMISSION_LIMITS.weight.default,
      classIndex,
      maxClassIndex: entry.max_class === undefined ? classIndex : indexOf(entry.max_class),
    });
  }
  const stages: { -readonly [K in keyof StageLimits]: StageLimits[K] } = {};
  if (own.prefill?.max_in_flight_per_instance !== undefined) stages.prefillInFlight = own.prefill.max_in_flight_per_instance;
  if (own.prefill?.max_queued_tokens_per_instance !== undefined) stages.prefillQueuedTokens = own.prefill.max_queued_tokens_per_instance;
  if (own.decode?.max_in_flight_per_instance !== undefined) stages.decodeInFlight = own.decode.max_in_flight_per_instance;
  if (own.decode?.max_kv_usage !== undefined) stages.decodeKvUsage = own.decode.max_kv_usage;
  return {
    enabled: own.enabled ?? true,
    classes,
    defaultTenant: { weight: ADMISSION_LIMITS.weight.default, classIndex: defaultClass, maxClassIndex: defaultClass },
    tenants,
    tenantHeader: own.tenant_header ?? DEFAULT_TENANT_HEADER,
    classHeader: own.class_header ?? DEFAULT_CLASS_HEADER,
    maxQueued: own.max_queued ?? ADMISSION_LIMITS.maxQueued.default,
    maxQueuedBytes: own.max_queued_bytes ?? ADMISSION_LIMITS.maxQueuedBytes.default,
    preemption: own.preemption ?? false,
    retryAfterSeconds: own.retry_after_seconds ?? ADMISSION_LIMITS.retryAfterSeconds.default,
    stages,
  };
}
