/**
 * Schema of `POST /v1/instances/refresh`: the full P/D topology snapshot the Controller pushes to the
 * Coordinator. Field ranges follow the source document; cross-field and cross-instance rules follow
 * DESIGN.md §2.1. Every problem of a body is reported at once, each with its wire path.
 */
import * as v from 'valibot';
import { errors, type FieldIssue } from '../core/errors.ts';
import { UnsafeInteger } from '../core/exact-json.ts';
import { crossInstanceIssues } from './refresh-cross.ts';
import { isValidSnapshot } from './refresh-fast.ts';
import { isPlainSnapshot } from './refresh-plain.ts';
import {
  BLOCK_SIZE_MAX,
  isIpString,
  isNonEmptyString,
  isPortString,
  isUintIn,
  LABEL_CODES,
  MAX_INSTANCES,
  PORT_MAX,
  PORT_MIN,
  ROLE_CODES,
  ROLE_DECODE,
  TOTAL_SLOTS_MAX,
  UINT32_MAX,
  UINT64_MAX_EXACT,
} from './refresh-limits.ts';
import { toFieldIssues } from './issues.ts';
import { KV_ENDPOINT_MESSAGE, KV_EVENTS_DP_SIZE_MAX, kvEndpointPort, kvRanksIssue } from './kv-endpoint.ts';

export * from './refresh-limits.ts';

/** Most issues one rejection lists; the rest are counted, so a hostile body cannot amplify. */
export const MAX_REPORTED_ISSUES = 100;
export const UNSAFE_INTEGER_MESSAGE = 'integer exceeds 2^53-1 and cannot be represented exactly';

/** Describes a received value for a message: `string "5"`, `number 1.5`, `null`, `an array`. */
function received(value: unknown): string {
  if (value === undefined) return 'nothing';
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  if (value instanceof UnsafeInteger) return value.source;
  if (typeof value === 'string') return `string ${JSON.stringify(value.length > 40 ? `${value.slice(0, 40)}…` : value)}`;
  if (typeof value === 'object') return 'an object';
  return `${typeof value} ${String(value)}`;
}

/**
 * Issues the validation in progress may still create. Valibot collects every issue, and a few MB
 * of wrong array items would allocate gigabytes of them: once the budget is spent, checks only
 * count what they no longer report (a skipped value passes its leaf check; the body is rejected on
 * the issues already collected). Validation is synchronous, so one module-level budget is safe;
 * validateRefresh sets it, a direct `v.safeParse(RefreshSchema, …)` runs unbudgeted.
 */
const budget = { left: Number.POSITIVE_INFINITY, skipped: 0 };

/** Spends one issue from the budget; false when it is spent (the issue is then only counted). */
function spend(): boolean {
  if (budget.left <= 0) {
    budget.skipped++;
    return false;
  }
  budget.left--;
  return true;
}

/** A leaf schema: one check, one message built from the received value, issues drawn on the budget. */
function leaf<T>(isValid: (x: unknown) => boolean, message: (x: unknown) => string) {
  return v.custom<T>(
    (x) => isValid(x) || !spend(),
    (issue) => message(issue.input),
  );
}

/** An unsigned integer in [min, max], with a message saying which part failed. */
function uint(min: number, max: number, describe = `in [${min}, ${max}]`) {
  return leaf<number>(
    (x) => isUintIn(x, min, max),
    (x) => {
      if (x instanceof UnsafeInteger) return UNSAFE_INTEGER_MESSAGE;
      if (typeof x !== 'number' || !Number.isInteger(x)) return `expected an integer, got ${received(x)}`;
      if (x > UINT64_MAX_EXACT) return UNSAFE_INTEGER_MESSAGE;
      return `must be ${describe}, got ${x}`;
    },
  );
}

const uint64 = () => uint(0, UINT64_MAX_EXACT, 'an unsigned integer');
const uint32 = (min = 0) => uint(min, UINT32_MAX);

function oneOf<T extends number>(codes: readonly T[], meaning: string) {
  return leaf<T>(
    (x) => (codes as readonly unknown[]).includes(x),
    (x) => (x instanceof UnsafeInteger ? UNSAFE_INTEGER_MESSAGE : `must be one of ${meaning}, got ${received(x)}`),
  );
}

const portString = leaf<string>(isPortString, (x) =>
  typeof x === 'string'
    ? `must be a decimal integer string in ["${PORT_MIN}", "${PORT_MAX}"] (no sign, spaces or leading zeros), got ${received(x)}`
    : `expected a string such as "1025", got ${received(x)}`,
);

const ipString = leaf<string>(isIpString, (x) => `expected an IPv4 or IPv6 address, got ${received(x)}`);

const nonEmptyString = leaf<string>(isNonEmptyString, (x) => `expected a non-empty string, got ${received(x)}`);

/**
 * A JSON object with the given entries, unknown keys kept. Arrays are refused first: Valibot's
 * object schemas accept them and would report every key as missing instead.
 */
function wireObject<const E extends v.ObjectEntries>(entries: E) {
  return v.pipe(
    v.custom<unknown>(
      (x) => typeof x === 'object' && x !== null && !Array.isArray(x),
      (issue) => `expected an object, got ${received(issue.input)}`,
    ),
    // A missing key is worded by toFieldIssues ("is required") like everywhere else.
    v.looseObject(entries),
  );
}

/** An array of at most MAX_INSTANCES items; a longer one is refused before any item is checked. */
function arrayOf<T extends v.GenericSchema>(item: T, what: string) {
  return v.pipe(
    v.custom<unknown[]>(
      (x) => Array.isArray(x) && x.length <= MAX_INSTANCES,
      (issue) =>
        Array.isArray(issue.input)
          ? `at most ${MAX_INSTANCES} ${what}, got ${issue.input.length}`
          : `expected an array, got ${received(issue.input)}`,
    ),
    v.array(item),
  );
}

/** Both numbers: a cross-field rule only compares values that passed (or skipped) their own check. */
const numbers = (...xs: unknown[]) => xs.every((x) => typeof x === 'number');

const staticInfo = v.pipe(
  wireObject({
    group_id: uint64(),
    max_seq_len: uint32(1),
    max_output_len: uint32(1),
    total_slots_num: uint(1, TOTAL_SLOTS_MAX),
    total_block_num: uint32(1),
    block_size: uint(1, BLOCK_SIZE_MAX),
    label: oneOf(LABEL_CODES, '2 (prefill), 3 (decode)'),
    role: oneOf(ROLE_CODES, '80 (prefill), 68 (decode), 85 (undefined)'),
  }),
  v.forward(
    v.partialCheck(
      [['max_seq_len'], ['max_output_len']],
      (s) => !numbers(s.max_seq_len, s.max_output_len) || s.max_output_len <= s.max_seq_len - 1,
      (issue) => `must be in [1, max_seq_len - 1] = [1, ${issue.input.max_seq_len - 1}], got ${issue.input.max_output_len}`,
    ),
    ['max_output_len'],
  ),
);

const dynamicInfo = wireObject({
  avail_slots_num: uint32(),
  avail_block_num: uint32(),
  peers: v.optional(arrayOf(uint64(), 'peers')),
});

/** A KV-event publisher endpoint, or null for none. */
const kvEndpoint = () =>
  v.optional(
    leaf<string | null>(
      (x) => x === null || kvEndpointPort(x) >= 0,
      (x) => `${KV_ENDPOINT_MESSAGE}, got ${received(x)}`,
    ),
  );

const instanceObject = wireObject({
  id: uint64(),
  ip: ipString,
  port: portString,
  metric_port: portString,
  model_name: nonEmptyString,
  static_info: staticInfo,
  dynamic_info: dynamicInfo,
  kv_events_endpoint: kvEndpoint(),
  kv_events_replay_endpoint: kvEndpoint(),
  kv_events_dp_size: v.optional(
    leaf<number | null>(
      (x) => x === null || isUintIn(x, 1, KV_EVENTS_DP_SIZE_MAX),
      (x) => `must be an integer in [1, ${KV_EVENTS_DP_SIZE_MAX}], got ${received(x)}`,
    ),
  ),
});

type InstanceShape = v.InferOutput<typeof instanceObject>;
type AvailPair = ['avail_slots_num', 'total_slots_num'] | ['avail_block_num', 'total_block_num'];
type AvailPaths = [['static_info', string], ['dynamic_info', string]];
type AvailMessage = (issue: v.PartialCheckIssue<InstanceShape>) => string;

/** `dynamic_info.<avail>` ≤ `static_info.<total>`, reported at the avail field. */
function availWithin(...[avail, total]: AvailPair) {
  return v.forward(
    v.partialCheck<InstanceShape, AvailPaths, InstanceShape, AvailMessage>(
      [
        ['static_info', total],
        ['dynamic_info', avail],
      ],
      (i) => !numbers(i.dynamic_info[avail], i.static_info[total]) || i.dynamic_info[avail] <= i.static_info[total],
      ({ input }) => `must be in [0, ${total}] = [0, ${input.static_info[total]}], got ${input.dynamic_info[avail]}`,
    ),
    // Valibot's path typing stops at the index signature a loose object adds; tests check the path.
    ['dynamic_info', avail] as never,
  );
}

const instanceSchema = v.pipe(
  instanceObject,
  availWithin('avail_slots_num', 'total_slots_num'),
  availWithin('avail_block_num', 'total_block_num'),
  v.forward(
    v.partialCheck(
      [
        ['static_info', 'role'],
        ['dynamic_info', 'peers'],
      ],
      (i) => i.static_info.role !== ROLE_DECODE || i.dynamic_info.peers !== undefined,
      'required for a decode instance (role 68): the prefill instances it is linked to',
    ),
    ['dynamic_info', 'peers'] as never,
  ),
  // The ranks' ports: the one rule across the publisher fields (each checked on its own above).
  v.rawCheck(({ dataset, addIssue }) => {
    // Actions run on input with issues too: an entry that is no object has its own issue.
    const entry = dataset.value as unknown;
    if (typeof entry !== 'object' || entry === null) return;
    const issue = kvRanksIssue(entry as Record<string, unknown>);
    if (issue !== undefined && spend()) addIssue({ message: issue[1], path: toPathItems([issue[0]]) });
  }),
);

/** The snapshot schema, structural and cross-instance rules included. */
export const RefreshSchema = v.pipe(
  wireObject({
    ids: arrayOf(uint64(), 'ids'),
    instances: arrayOf(instanceSchema, 'instances'),
  }),
  v.rawCheck(({ dataset, addIssue }) => {
    crossInstanceIssues(dataset.value, (at, message) => {
      if (spend()) addIssue({ message: message(), path: toPathItems(at) });
    });
  }),
);

/** A validated snapshot; unknown fields are kept on every object. */
export type RefreshSnapshot = v.InferOutput<typeof RefreshSchema>;
export type RefreshInstance = RefreshSnapshot['instances'][number];

export type ValidationResult = { ok: true; snapshot: RefreshSnapshot } | { ok: false; issues: FieldIssue[] };

/**
 * Validates a parsed refresh body and lists every problem, each with its wire path.
 * @example const r = validateRefresh(body); if (!r.ok) console.log(r.issues[0]?.path);
 */
export function validateRefresh(body: unknown): ValidationResult {
  // Bodies arrive every second and are almost always valid: a hand-written check accepts those at
  // a fraction of Valibot's cost; Valibot runs only to explain a rejection (bench/refresh.bench.ts).
  if (isPlainSnapshot(body) || isValidSnapshot(body)) return { ok: true, snapshot: body as RefreshSnapshot };
  budget.left = MAX_REPORTED_ISSUES;
  budget.skipped = 0;
  let result: v.SafeParseResult<typeof RefreshSchema>;
  try {
    result = v.safeParse(RefreshSchema, body, { abortEarly: false });
  } finally {
    budget.left = Number.POSITIVE_INFINITY;
  }
  if (result.success) return { ok: true, snapshot: result.output };
  return { ok: false, issues: capIssues(toFieldIssues(result.issues), budget.skipped) };
}

/**
 * Validates a parsed refresh body, throwing the 400 PdlinkError that lists every issue.
 * @example registry.apply(parseRefresh(await readJsonBody(c, { limitBytes })));
 */
export function parseRefresh(body: unknown): RefreshSnapshot {
  const result = validateRefresh(body);
  if (!result.ok) throw errors.invalidBody(result.issues);
  return result.snapshot;
}

/** The first MAX_REPORTED_ISSUES issues, then one line counting the rest (listed or skipped). */
function capIssues(issues: FieldIssue[], skipped: number): FieldIssue[] {
  const more = Math.max(0, issues.length - MAX_REPORTED_ISSUES) + skipped;
  if (more === 0) return issues;
  return [...issues.slice(0, MAX_REPORTED_ISSUES), { path: '', message: `${more} more issue${more === 1 ? '' : 's'} not listed` }];
}

function toPathItems(at: readonly (string | number)[]): [v.IssuePathItem, ...v.IssuePathItem[]] {
  const [first, ...rest] = at.map((key): v.IssuePathItem => ({
    type: 'unknown',
    origin: 'value',
    input: undefined,
    key,
    value: undefined,
  }));
  return [first!, ...rest];
}
