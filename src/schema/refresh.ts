/**
 * Schema of `POST /v1/instances/refresh`: the full P/D topology snapshot the Controller pushes to the
 * Coordinator. Field ranges follow the source document; cross-field and cross-instance rules follow
 * DESIGN.md §2.1. Every problem of a body is reported at once, each with its wire path.
 */
import * as v from 'valibot';
import { errors, type FieldIssue } from '../errors.ts';
import type { RoleCode } from '../cluster/instance.ts';
import { UnsafeInteger } from '../http/body.ts';
import { isValidSnapshot } from './refresh-fast.ts';
import {
  BLOCK_SIZE_MAX,
  isIpString,
  isNonEmptyString,
  isPortString,
  isUint64,
  isUintIn,
  LABEL_CODES,
  MAX_INSTANCES,
  PORT_MAX,
  PORT_MIN,
  ROLE_CODES,
  ROLE_DECODE,
  ROLE_PREFILL,
  TOTAL_SLOTS_MAX,
  UINT32_MAX,
  UINT64_MAX_EXACT,
} from './refresh-limits.ts';
import { toFieldIssues } from './issues.ts';

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

/** An unsigned integer schema in [min, max]; one check and a message saying which part failed. */
function uint(min: number, max: number, describe = `in [${min}, ${max}]`) {
  return v.custom<number>(
    (x) => isUintIn(x, min, max),
    (issue) => {
      const x = issue.input;
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
  return v.custom<T>(
    (x) => (codes as readonly unknown[]).includes(x),
    (issue) => (issue.input instanceof UnsafeInteger ? UNSAFE_INTEGER_MESSAGE : `must be one of ${meaning}, got ${received(issue.input)}`),
  );
}

const portString = v.custom<string>(isPortString, (issue) =>
  typeof issue.input === 'string'
    ? `must be a decimal integer string in ["${PORT_MIN}", "${PORT_MAX}"] (no sign, spaces or leading zeros), got ${received(issue.input)}`
    : `expected a string such as "1025", got ${received(issue.input)}`,
);

const ipString = v.custom<string>(
  isIpString,
  (issue) => `expected an IPv4 or IPv6 address, got ${received(issue.input)}`,
);

const nonEmptyString = v.custom<string>(
  isNonEmptyString,
  (issue) => `expected a non-empty string, got ${received(issue.input)}`,
);

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

function arrayOf<T extends v.GenericSchema>(item: T) {
  return v.array(item, (issue) => `expected an array, got ${received(issue.input)}`);
}

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
      (s) => s.max_output_len <= s.max_seq_len - 1,
      (issue) => `must be in [1, max_seq_len - 1] = [1, ${issue.input.max_seq_len - 1}], got ${issue.input.max_output_len}`,
    ),
    ['max_output_len'],
  ),
);

const dynamicInfo = wireObject({
  avail_slots_num: uint32(),
  avail_block_num: uint32(),
  peers: v.optional(arrayOf(uint64())),
});

const instanceObject = wireObject({
  id: uint64(),
  ip: ipString,
  port: portString,
  metric_port: portString,
  model_name: nonEmptyString,
  static_info: staticInfo,
  dynamic_info: dynamicInfo,
});

function availMessage(total: 'total_slots_num' | 'total_block_num', limit: number, got: number): string {
  return `must be in [0, ${total}] = [0, ${limit}], got ${got}`;
}

const instanceSchema = v.pipe(
  instanceObject,
  v.forward(
    v.partialCheck(
      [['static_info', 'total_slots_num'], ['dynamic_info', 'avail_slots_num']],
      (i) => i.dynamic_info.avail_slots_num <= i.static_info.total_slots_num,
      (issue) => availMessage('total_slots_num', issue.input.static_info.total_slots_num, issue.input.dynamic_info.avail_slots_num),
    ),
    // Valibot's path typing stops at the index signature a loose object adds; the path is checked by tests.
    ['dynamic_info', 'avail_slots_num'] as never,
  ),
  v.forward(
    v.partialCheck(
      [['static_info', 'total_block_num'], ['dynamic_info', 'avail_block_num']],
      (i) => i.dynamic_info.avail_block_num <= i.static_info.total_block_num,
      (issue) => availMessage('total_block_num', issue.input.static_info.total_block_num, issue.input.dynamic_info.avail_block_num),
    ),
    ['dynamic_info', 'avail_block_num'] as never,
  ),
  v.forward(
    v.partialCheck(
      [['static_info', 'role'], ['dynamic_info', 'peers']],
      (i) => i.static_info.role !== ROLE_DECODE || i.dynamic_info.peers !== undefined,
      'required for a decode instance (role 68): the prefill instances it is linked to',
    ),
    ['dynamic_info', 'peers'] as never,
  ),
);

/** The snapshot schema, structural and cross-instance rules included. */
export const RefreshSchema = v.pipe(
  wireObject({
    ids: v.pipe(arrayOf(uint64()), v.maxLength(MAX_INSTANCES, (i) => `at most ${MAX_INSTANCES} ids, got ${i.received}`)),
    instances: v.pipe(
      arrayOf(instanceSchema),
      v.maxLength(MAX_INSTANCES, (i) => `at most ${MAX_INSTANCES} instances, got ${i.received}`),
    ),
  }),
  v.rawCheck(({ dataset, addIssue }) => {
    for (const issue of crossInstanceIssues(dataset.value)) {
      addIssue({ message: issue.message, path: toPathItems(issue.at) });
    }
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
  if (isValidSnapshot(body)) return { ok: true, snapshot: body as RefreshSnapshot };
  const result = v.safeParse(RefreshSchema, body, { abortEarly: false });
  if (result.success) return { ok: true, snapshot: result.output };
  return { ok: false, issues: capIssues(toFieldIssues(result.issues)) };
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

function capIssues(issues: FieldIssue[]): FieldIssue[] {
  if (issues.length <= MAX_REPORTED_ISSUES) return issues;
  const more = issues.length - MAX_REPORTED_ISSUES;
  return [...issues.slice(0, MAX_REPORTED_ISSUES), { path: '', message: `${more} more issue${more === 1 ? '' : 's'} not listed` }];
}

// ---- cross-instance rules -------------------------------------------------------------------

type Key = string | number;
interface LocatedIssue {
  at: Key[];
  message: string;
}

const ROLE_NAME: Record<number, string> = { 80: 'prefill', 68: 'decode', 85: 'undefined' };

/**
 * Rules spanning instances: ids ↔ instances, duplicates, peers. Runs on partially valid input too
 * (so its issues come with the structural ones), skipping values that already have their own issue
 * and reporting a missing reference only when every id it could refer to is readable.
 */
function crossInstanceIssues(root: unknown): LocatedIssue[] {
  const out: LocatedIssue[] = [];
  if (root === null || typeof root !== 'object') return out;
  const { ids, instances } = root as { ids?: unknown; instances?: unknown };
  const idList = Array.isArray(ids) ? ids : undefined;
  const instanceList = Array.isArray(instances) ? instances : undefined;

  const listed = new Map<number, number>();
  let idsReadable = idList !== undefined;
  idList?.forEach((id, index) => {
    if (!isUint64(id)) return void (idsReadable = false);
    const first = listed.get(id);
    if (first === undefined) listed.set(id, index);
    else out.push({ at: ['ids', index], message: `duplicate id ${id} (first at ids[${first}])` });
  });

  const byId = new Map<number, { index: number; role: unknown }>();
  let instancesReadable = instanceList !== undefined;
  instanceList?.forEach((item, index) => {
    const id = (item as { id?: unknown } | null)?.id;
    if (!isUint64(id)) return void (instancesReadable = false);
    const first = byId.get(id);
    if (first !== undefined) {
      out.push({ at: ['instances', index, 'id'], message: `duplicate instance id ${id} (first at instances[${first.index}])` });
      return;
    }
    byId.set(id, { index, role: (item as { static_info?: { role?: unknown } }).static_info?.role });
    if (idsReadable && !listed.has(id)) out.push({ at: ['instances', index, 'id'], message: `id ${id} is not listed in ids` });
  });
  if (instancesReadable) {
    for (const [id, index] of listed) {
      if (!byId.has(id)) out.push({ at: ['ids', index], message: `id ${id} has no entry in instances` });
    }
  }

  instanceList?.forEach((item, index) => {
    const role = (item as { static_info?: { role?: unknown } } | null)?.static_info?.role;
    const peers = (item as { dynamic_info?: { peers?: unknown } } | null)?.dynamic_info?.peers;
    if (!Array.isArray(peers)) return;
    const seen = new Map<number, number>();
    peers.forEach((peer, k) => {
      if (!isUint64(peer)) return;
      const at = ['instances', index, 'dynamic_info', 'peers', k];
      const first = seen.get(peer);
      if (first !== undefined) return void out.push({ at, message: `duplicate peer id ${peer} (first at peers[${first}])` });
      seen.set(peer, k);
      const target = byId.get(peer);
      if (target === undefined) {
        if (instancesReadable) out.push({ at, message: `peer ${peer} is not an instance of this snapshot` });
        return;
      }
      const wanted = role === ROLE_DECODE ? ROLE_PREFILL : role === ROLE_PREFILL ? ROLE_DECODE : undefined;
      if (wanted !== undefined && ROLE_CODES.includes(target.role as RoleCode) && target.role !== wanted) {
        out.push({
          at,
          message: `peer ${peer} has role ${String(target.role)} (${ROLE_NAME[target.role as number]}); the peers of a ${ROLE_NAME[role as number]} instance must be ${ROLE_NAME[wanted]} instances (role ${wanted})`,
        });
      }
    });
  });
  return out;
}

function toPathItems(at: Key[]): [v.IssuePathItem, ...v.IssuePathItem[]] {
  const [first, ...rest] = at.map((key): v.IssuePathItem => ({ type: 'unknown', origin: 'value', input: undefined, key, value: undefined }));
  return [first!, ...rest];
}
