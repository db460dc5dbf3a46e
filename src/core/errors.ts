/**
 * The one error type of pdlink, and the table of every error it raises.
 *
 * Each error has a stable string `code`, the HTTP `status` it renders as, and an optional list
 * of field `issues` (path + message) for validation failures. `src/http/envelope.ts` renders it as
 * `{"error", "error_type", "issues"?}`.
 */

export interface FieldIssue {
  /** Dotted path with indices, e.g. `instances[3].static_info.block_size`; "" for the whole body. */
  readonly path: string;
  readonly message: string;
}

/** HTTP status of every error code; the only place a code meets a status. */
export const ERROR_STATUS = {
  bad_request: 400,
  invalid_body: 400,
  unprocessable: 422,
  unauthorized: 401,
  not_found: 404,
  method_not_allowed: 405,
  conflict: 409,
  payload_too_large: 413,
  unsupported_media_type: 400,
  /** Nobody reads this answer; 400 because the client caused it (nginx would log 499). */
  client_closed: 400,
  too_many_requests: 429,
  /** Admission: the request's class waited its whole queue timeout without room. */
  queue_timeout: 429,
  /** Admission: the queue was full of requests of the same class or higher. */
  queue_full: 429,
  /** Admission: a waiting request made room in a full queue for a higher class. */
  shed: 429,
  /** Admission: an admitted request that had sent nothing was cut for a higher class. */
  preempted: 503,
  not_ready: 503,
  unavailable: 503,
  insufficient_capacity: 503,
  upstream_failed: 502,
  timeout: 504,
  loop_detected: 508,
  config_invalid: 500,
  internal: 500,
} as const;

export type ErrorCode = keyof typeof ERROR_STATUS;

/** Error types as the wire names them (`error_type`). */
const ERROR_TYPE: Record<ErrorCode, string> = {
  bad_request: 'BadRequest',
  invalid_body: 'InvalidRequestBody',
  unprocessable: 'UnprocessableEntity',
  unauthorized: 'Unauthorized',
  not_found: 'NotFound',
  method_not_allowed: 'MethodNotAllowed',
  conflict: 'Conflict',
  payload_too_large: 'PayloadTooLarge',
  unsupported_media_type: 'UnsupportedMediaType',
  client_closed: 'ClientClosedRequest',
  too_many_requests: 'TooManyRequests',
  queue_timeout: 'QueueTimeout',
  queue_full: 'QueueFull',
  shed: 'Shed',
  preempted: 'Preempted',
  not_ready: 'NotReady',
  unavailable: 'ServiceUnavailable',
  insufficient_capacity: 'InsufficientCapacity',
  upstream_failed: 'UpstreamFailed',
  timeout: 'Timeout',
  loop_detected: 'LoopDetected',
  config_invalid: 'ConfigInvalid',
  internal: 'InternalError',
};

export class PdlinkError extends Error {
  readonly code: ErrorCode;
  readonly issues: readonly FieldIssue[];

  constructor(code: ErrorCode, message: string, options: { issues?: readonly FieldIssue[]; cause?: unknown } = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'PdlinkError';
    this.code = code;
    this.issues = options.issues ?? [];
  }

  get status(): (typeof ERROR_STATUS)[ErrorCode] {
    return ERROR_STATUS[this.code];
  }

  get errorType(): string {
    return ERROR_TYPE[this.code];
  }
}

/**
 * A command-line or configuration problem (a bad flag, an unreadable or invalid file): the command
 * prints the message and exits with 2. Thrown by config/, the simulator's options and cli/; only
 * cli/ and main.ts turn it into an exit status.
 */
export class ConfigError extends Error {
  readonly exitCode = 2;
  constructor(message: string) {
    super(message);
    this.name = 'ConfigError';
  }
}

/** Formats issues as one line: `a.b: reason; c[0]: reason`. */
export function describeIssues(issues: readonly FieldIssue[]): string {
  return issues.map((i) => (i.path === '' ? i.message : `${i.path}: ${i.message}`)).join('; ');
}

/** Every error pdlink raises, by factory, so messages stay uniform. */
export const errors = {
  malformedJson: (cause?: unknown) =>
    new PdlinkError('bad_request', 'request body is not valid JSON', { issues: [{ path: '', message: 'malformed JSON' }], cause }),
  /** `at`: the character offset of the first bracket past the limit. */
  nestedTooDeep: (limit: number, at: number) =>
    new PdlinkError('bad_request', `request body nests arrays and objects deeper than ${limit} levels (at character ${at})`, {
      issues: [{ path: '', message: `nested deeper than ${limit} levels` }],
    }),
  /** A body that parsed but cannot be written back as JSON for an engine: the client's request is at fault. */
  unforwardableBody: (cause: unknown) =>
    new PdlinkError('bad_request', `request body cannot be forwarded as JSON: ${cause instanceof Error ? cause.message : String(cause)}`, {
      issues: [{ path: '', message: 'cannot be serialized as JSON' }],
      cause,
    }),
  emptyBody: () => new PdlinkError('bad_request', 'request body is empty', { issues: [{ path: '', message: 'empty body' }] }),
  wrongContentType: (got: string | undefined) =>
    new PdlinkError('unsupported_media_type', `content-type must be application/json, got ${got ? JSON.stringify(got) : 'none'}`, {
      issues: [{ path: '', message: 'content-type must be application/json' }],
    }),
  /** The client closed its connection before its request body was complete. */
  clientClosed: (cause?: unknown) =>
    new PdlinkError('client_closed', 'the client closed the connection before the request body was complete', { cause }),
  bodyTooLarge: (limitBytes: number) => new PdlinkError('payload_too_large', `request body exceeds the limit of ${limitBytes} bytes`),
  invalidBody: (issues: readonly FieldIssue[]) =>
    new PdlinkError('invalid_body', `invalid request body: ${describeIssues(issues)}`, { issues }),
  unprocessable: (issues: readonly FieldIssue[]) =>
    new PdlinkError('unprocessable', `request body does not meet the specification: ${describeIssues(issues)}`, { issues }),
  badRequest: (message: string, issues: readonly FieldIssue[] = []) => new PdlinkError('bad_request', message, { issues }),
  notFound: (what: string) => new PdlinkError('not_found', `${what} not found`),
  /** `allow` is what the Allow header lists. */
  methodNotAllowed: (method: string, path: string, allow: readonly string[]) =>
    new PdlinkError('method_not_allowed', `${method} is not served on ${path}; it serves ${allow.join(', ')}`),
  /** A missing or wrong bearer credential; the message never repeats what was sent. */
  unauthorized: (what: string) => new PdlinkError('unauthorized', `${what} required: send Authorization: Bearer <${what}>`),
  rateLimited: (why: string) => new PdlinkError('too_many_requests', why),
  notReady: (why: string) => new PdlinkError('not_ready', why),
  unavailable: (why: string) => new PdlinkError('unavailable', why),
  tooManyRequests: (limit: number) => new PdlinkError('too_many_requests', `more than ${limit} requests in flight`),
  /** Admission refused or cut a request; `code` says why (the message says more). */
  admissionRefused: (code: 'queue_timeout' | 'queue_full' | 'shed' | 'preempted', why: string) => new PdlinkError(code, why),
  /** Every instance that could serve the request is at its `single_node_max_requests`. */
  instancesAtCap: (why: string) => new PdlinkError('too_many_requests', why),
  upstreamFailed: (what: string, cause?: unknown) => new PdlinkError('upstream_failed', what, { cause }),
  timeout: (what: string) => new PdlinkError('timeout', what),
  loopDetected: (via: string) =>
    new PdlinkError(
      'loop_detected',
      `request already passed through this proxy (Via: ${via}); an instance's address points back at the Coordinator`,
    ),
  configInvalid: (issues: readonly FieldIssue[], source: string) =>
    new PdlinkError('config_invalid', `invalid configuration (${source}): ${describeIssues(issues)}`, { issues }),
  internal: (cause?: unknown) => new PdlinkError('internal', 'internal error', { cause }),
  /** A programming error: an onChange listener of the cluster registry applied a snapshot itself. */
  reentrantApply: () =>
    new PdlinkError('internal', 'ClusterRegistry.apply was called from an onChange listener; apply after the notification returns'),
  insufficientCapacity: (instanceId: number, resource: 'slots' | 'blocks', free: number, requested: number) =>
    new PdlinkError('insufficient_capacity', `instance ${instanceId} has ${free} free ${resource}, ${requested} requested`),
  /** No instance pair could take a request; `why` names the refusals. */
  noPairWithRoom: (why: string) => new PdlinkError('insufficient_capacity', `no instance pair has room for this request: ${why}`),
  instanceUnknown: (instanceId: number) => new PdlinkError('unavailable', `instance ${instanceId} is not registered`),
  /** A change that collides with what exists; `path` names the field. */
  conflictWith: (message: string, path: string) => new PdlinkError('conflict', message, { issues: [{ path, message }] }),
  transferExists: (requestId: string) => new PdlinkError('conflict', `transfer ${JSON.stringify(requestId)} is already active`),
  transferNotFound: (requestId: string) => new PdlinkError('not_found', `transfer ${JSON.stringify(requestId)} not found`),
  /** `action` reads after "cannot": `begin transferring`, `complete`, `extend its lease`. */
  illegalTransition: (requestId: string, state: string, action: string) =>
    new PdlinkError('conflict', `transfer ${JSON.stringify(requestId)} is ${state}, cannot ${action}`),
  /** The device runtime library cannot be used: missing, unloadable, or of another ABI version. */
  runtimeLoadFailed: (path: string, why: string, cause?: unknown) =>
    new PdlinkError('unavailable', `device runtime ${path}: ${why}`, { cause }),
  invalidArgument: (path: string, message: string) =>
    new PdlinkError('bad_request', `${path}: ${message}`, { issues: [{ path, message }] }),
};

/**
 * A constructor or factory was given an option it cannot use: a mistake in the calling code, found
 * before anything starts. A RangeError, so callers that catch those keep working.
 */
export class OptionError extends RangeError {
  constructor(message: string) {
    super(message);
    this.name = 'OptionError';
  }
}

/**
 * Every option error, by factory, so all constructors word them alike (as piscina does:
 * `maxThreads must be a positive integer`); `name` is the option as the caller spells it.
 */
export const optionErrors = {
  positiveInteger: (name: string) => new OptionError(`${name} must be a positive integer`),
  positiveNumber: (name: string) => new OptionError(`${name} must be a positive number`),
  nonNegativeNumber: (name: string) => new OptionError(`${name} must be a non-negative number`),
  /** `max` may be spelled as a formula (`2^31 - 1`) where that reads better than its digits. */
  integerIn: (name: string, min: number, max: number | string) => new OptionError(`${name} must be an integer in [${min}, ${max}]`),
  /** `than` names the option this one may not fall below. */
  notBelow: (name: string, than: string) => new OptionError(`${name} must be a number ≥ ${than}`),
  /** `what` is one item of the list, e.g. `local device`. */
  empty: (name: string, what: string) => new OptionError(`${name} must name at least one ${what}`),
};
