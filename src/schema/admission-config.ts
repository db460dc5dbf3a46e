/**
 * `pdlink.admission` of `ms_coordinator.json`: who a request is (tenant and priority class), how long
 * each class may wait for room, how tenants share a class, how much a queue may hold, and the limits
 * past which a stage (prefill or decode) counts as saturated. Every key is optional; a class or a
 * tenant named anywhere must be one the section defines, and a wrong name is refused with its path.
 */
import * as v from 'valibot';
import { INT32_MAX } from '../core/limits.ts';

/** Class and tenant names: short, printable, usable as metric labels. */
export const ADMISSION_NAME = /^[A-Za-z0-9][A-Za-z0-9._:-]{0,63}$/;
/** Header names: HTTP token characters. */
const HEADER_NAME = /^[a-z0-9!#$%&'*+.^_`|~-]{1,64}$/;
export const MAX_CLASSES = 16;
export const MAX_TENANTS = 10_000;
export const ADMISSION_LIMITS = {
  maxQueued: { min: 0, max: 1_000_000, default: 1024 },
  maxQueuedBytes: { min: 0, max: 2 ** 40, default: 64 * 1024 * 1024 },
  retryAfterSeconds: { min: 1, max: 3600, default: 1 },
  weight: { min: 0.001, max: 1_000_000, default: 1 },
  inFlight: { min: 1, max: 1_000_000 },
  queuedTokens: { min: 1, max: INT32_MAX },
} as const;

const name = (what: string) =>
  v.pipe(
    v.string('must be a string'),
    v.regex(ADMISSION_NAME, `must be a ${what} name: 1 to 64 of A-Z a-z 0-9 . _ : - (a letter or digit first)`),
  );

const header = v.pipe(v.string('must be a string'), v.regex(HEADER_NAME, 'must be a lower-case HTTP header name'));

const intIn = (min: number, max: number) =>
  v.pipe(
    v.number('must be a number'),
    v.integer('must be an integer'),
    v.minValue(min, `must be in [${min}, ${max}]`),
    v.maxValue(max, `must be in [${min}, ${max}]`),
  );

const ClassEntry = v.strictObject({
  name: name('class'),
  /** How long a request of this class may wait for room before 429; 0 = never wait. */
  queue_timeout_ms: v.optional(intIn(0, INT32_MAX)),
});

const TenantEntry = v.strictObject({
  /** Share of its class when several tenants wait (default 1). */
  weight: v.optional(
    v.pipe(
      v.number('must be a number'),
      v.minValue(ADMISSION_LIMITS.weight.min, `must be in [${ADMISSION_LIMITS.weight.min}, ${ADMISSION_LIMITS.weight.max}]`),
      v.maxValue(ADMISSION_LIMITS.weight.max, `must be in [${ADMISSION_LIMITS.weight.min}, ${ADMISSION_LIMITS.weight.max}]`),
    ),
  ),
  /** The class of its requests that name none (default: default_class). */
  class: v.optional(name('class')),
  /** The highest class its requests may ask for with the class header (default: its class). */
  max_class: v.optional(name('class')),
});

export const AdmissionSection = v.pipe(
  v.strictObject({
    /** false: today's instant 429 past the limits, no queue (default true). */
    enabled: v.optional(v.boolean('must be a boolean')),
    /** Priority classes, highest first (default interactive, then batch). */
    classes: v.optional(
      v.pipe(
        v.array(ClassEntry, 'must be an array of classes'),
        v.minLength(1, 'must name at least one class'),
        v.maxLength(MAX_CLASSES, `must name at most ${MAX_CLASSES} classes`),
      ),
    ),
    /** The class of requests whose tenant names none (default: the first class). */
    default_class: v.optional(name('class')),
    /** Header naming the tenant when API keys are off (default x-pdlink-tenant). */
    tenant_header: v.optional(header),
    /** Header asking for a class, bounded by the tenant's max_class (default x-pdlink-priority). */
    class_header: v.optional(header),
    tenants: v.optional(
      v.pipe(
        v.record(name('tenant'), TenantEntry, 'must be an object of tenants by name'),
        v.check((t) => Object.keys(t).length <= MAX_TENANTS, `must name at most ${MAX_TENANTS} tenants`),
      ),
    ),
    /** Requests waiting at once, over every class (default 1024; 0 = never queue). */
    max_queued: v.optional(intIn(ADMISSION_LIMITS.maxQueued.min, ADMISSION_LIMITS.maxQueued.max)),
    /** Request bodies held by waiting requests, in bytes (default 64 MiB). */
    max_queued_bytes: v.optional(intIn(ADMISSION_LIMITS.maxQueuedBytes.min, ADMISSION_LIMITS.maxQueuedBytes.max)),
    /** A higher class may cut an admitted request of a lower one that has sent nothing yet (default false). */
    preemption: v.optional(v.boolean('must be a boolean')),
    /** `Retry-After` of every refusal (default 1). */
    retry_after_seconds: v.optional(intIn(ADMISSION_LIMITS.retryAfterSeconds.min, ADMISSION_LIMITS.retryAfterSeconds.max)),
    /** A prefill instance is full past either limit (both off by default). */
    prefill: v.optional(
      v.strictObject({
        max_in_flight_per_instance: v.optional(intIn(ADMISSION_LIMITS.inFlight.min, ADMISSION_LIMITS.inFlight.max)),
        max_queued_tokens_per_instance: v.optional(intIn(ADMISSION_LIMITS.queuedTokens.min, ADMISSION_LIMITS.queuedTokens.max)),
      }),
    ),
    /** A decode instance is full past either limit (both off by default). */
    decode: v.optional(
      v.strictObject({
        max_in_flight_per_instance: v.optional(intIn(ADMISSION_LIMITS.inFlight.min, ADMISSION_LIMITS.inFlight.max)),
        max_kv_usage: v.optional(
          v.pipe(v.number('must be a number'), v.minValue(0.01, 'must be in [0.01, 1]'), v.maxValue(1, 'must be in [0.01, 1]')),
        ),
      }),
    ),
  }),
  v.rawCheck(({ dataset, addIssue }) => {
    if (!dataset.typed) return;
    const section = dataset.value;
    const classes = section.classes?.map((c) => c.name) ?? DEFAULT_CLASS_NAMES;
    const known = classes.join(', ');
    const seen = new Set<string>();
    section.classes?.forEach((entry, i) => {
      if (seen.has(entry.name))
        addIssue({
          message: `duplicate class ${entry.name}`,
          path: [item(section, 'classes'), item(section.classes, i), item(entry, 'name')],
        });
      seen.add(entry.name);
    });
    if (section.default_class !== undefined && !classes.includes(section.default_class))
      addIssue({ message: `must be one of the classes (${known})`, path: [item(section, 'default_class')] });
    for (const [tenant, entry] of Object.entries(section.tenants ?? {})) {
      for (const key of ['class', 'max_class'] as const) {
        const value = entry[key];
        if (value !== undefined && !classes.includes(value))
          addIssue({
            message: `must be one of the classes (${known})`,
            path: [item(section, 'tenants'), item(section.tenants, tenant), item(entry, key)],
          });
      }
      const own = entry.class ?? section.default_class ?? classes[0]!;
      if (entry.max_class !== undefined && classes.indexOf(entry.max_class) > classes.indexOf(own))
        addIssue({
          message: `must not be below the tenant's class ${own} (classes run highest first: ${known})`,
          path: [item(section, 'tenants'), item(section.tenants, tenant), item(entry, 'max_class')],
        });
    }
  }),
);
export type AdmissionSection = v.InferOutput<typeof AdmissionSection>;

/** The classes when the file names none, highest first. */
export const DEFAULT_CLASS_NAMES: readonly string[] = ['interactive', 'batch'];

function item(input: unknown, key: string | number): v.IssuePathItem {
  const value = (input as Record<string | number, unknown>)[key];
  return typeof key === 'number'
    ? { type: 'array', origin: 'value', input: input as unknown[], key, value }
    : { type: 'object', origin: 'value', input: input as Record<string, unknown>, key, value };
}
