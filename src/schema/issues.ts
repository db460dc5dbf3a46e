/**
 * Turns Valibot issues into pdlink field issues with wire paths such as
 * `instances[3].static_info.block_size`, and is the one way a value is checked against a schema
 * outside the JSON body middleware: `parseOrRefuse` runs the schema and hands every issue to the
 * error the caller names (422, 400, a configuration error), so each site picks its error in one place.
 */
import * as v from 'valibot';
import type { FieldIssue } from '../core/errors.ts';

/** Builds the error a refused value throws, e.g. `errors.unprocessable` (422) or `errors.invalidBody` (400). */
export type Refusal = (issues: readonly FieldIssue[]) => Error;

export interface ParseOptions {
  /** Prefix of every issue path: where the value sits in a larger document, e.g. `proxy_config`. */
  readonly at?: string;
  /** Refuse anything but a JSON object at the top (Valibot's object schemas accept arrays too). */
  readonly object?: boolean;
}

/**
 * The schema's output for `input`, or `refuse(issues)` thrown with every issue (not just the first).
 * @example const body = parseOrRefuse(RoleBody, input, errors.unprocessable, { object: true });
 */
export function parseOrRefuse<S extends v.GenericSchema>(
  schema: S,
  input: unknown,
  refuse: Refusal,
  options: ParseOptions = {},
): v.InferOutput<S> {
  const { at } = options;
  if (options.object === true && (typeof input !== 'object' || input === null || Array.isArray(input)))
    throw refuse([{ path: at ?? '', message: 'must be a JSON object' }]);
  const result = v.safeParse(schema, input, { abortEarly: false });
  if (result.success) return result.output;
  const issues = toFieldIssues(result.issues);
  throw refuse(at === undefined ? issues : issues.map((i) => ({ ...i, path: i.path === '' ? at : `${at}.${i.path}` })));
}

/**
 * Formats a Valibot issue path as dotted keys with bracketed indices.
 * @example formatPath(issue.path) // 'instances[0].dynamic_info.peers[2]'
 */
export function formatPath(path: readonly { key: unknown }[] | undefined): string {
  if (path === undefined) return '';
  let out = '';
  for (const item of path) {
    const key = item.key;
    if (typeof key === 'number') out += `[${key}]`;
    else out += out === '' ? String(key) : `.${String(key)}`;
  }
  return out;
}

/** Every issue of a failed parse, flattened, each with its path. */
export function toFieldIssues(issues: readonly v.BaseIssue<unknown>[]): FieldIssue[] {
  return issues.map((issue) => ({ path: formatPath(issue.path as { key: unknown }[] | undefined), message: messageOf(issue) }));
}

/** What a strict object says of a key it does not know. */
export const UNKNOWN_KEY_MESSAGE = 'is not a known key here (misspelt, or in the wrong place)';

/**
 * Valibot reports a missing key, and an unknown one in a strict object, as object-level "Invalid
 * key: Expected never" issues; say them plainly.
 */
function messageOf(issue: v.BaseIssue<unknown>): string {
  if (!issue.type.endsWith('object') || (issue.path?.length ?? 0) === 0) return issue.message;
  if (issue.received === 'undefined') return 'is required';
  return issue.expected === 'never' && issue.path!.at(-1)!.origin === 'key' ? UNKNOWN_KEY_MESSAGE : issue.message;
}
