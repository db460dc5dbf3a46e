/**
 * Turns Valibot issues into pdlink field issues with wire paths such as
 * `instances[3].static_info.block_size`.
 */
import type * as v from 'valibot';
import type { FieldIssue } from '../core/errors.ts';

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

/** Valibot reports a missing key as an object-level "Invalid key" issue; say it plainly. */
function messageOf(issue: v.BaseIssue<unknown>): string {
  const missingKey = issue.type.endsWith('object') && issue.received === 'undefined' && (issue.path?.length ?? 0) > 0;
  return missingKey ? 'is required' : issue.message;
}
