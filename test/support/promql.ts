/**
 * The metric names a PromQL expression reads, for checking a Grafana dashboard against real
 * `/metrics` output. Not a PromQL parser: it removes what cannot be a metric name (strings, label
 * matchers, ranges, grouping clauses, numbers, Grafana variables) and keeps the identifiers that
 * are neither functions nor keywords.
 */

const KEYWORDS = new Set([
  'by',
  'without',
  'on',
  'ignoring',
  'group_left',
  'group_right',
  'bool',
  'and',
  'or',
  'unless',
  'offset',
  'inf',
  'nan',
]);

/**
 * @example metricNames('sum by (le) (rate(pdlink_x_bucket{job="a"}[5m]))') // ['pdlink_x_bucket']
 */
export function metricNames(expr: string): string[] {
  const stripped = expr
    .replace(/"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'|`[^`]*`/g, ' ')
    .replace(/\{[^}]*\}/g, ' ')
    .replace(/\[[^\]]*\]/g, ' ')
    .replace(/\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)/g, ' ')
    .replace(/\$\{?\w+\}?/g, ' ');
  const names = new Set<string>();
  for (const match of stripped.matchAll(/[A-Za-z_:][A-Za-z0-9_:]*/g)) {
    const name = match[0];
    const after = stripped.slice(match.index + name.length).trimStart();
    if (after.startsWith('(') || KEYWORDS.has(name.toLowerCase())) continue;
    names.add(name);
  }
  return [...names];
}

/** Metric families declared in a Prometheus exposition (`# TYPE name type`), by name. */
export function families(exposition: string): Map<string, string> {
  const out = new Map<string, string>();
  for (const line of exposition.split('\n')) {
    const m = /^# TYPE (\S+) (\S+)/.exec(line);
    if (m !== null) out.set(m[1]!, m[2]!);
  }
  return out;
}

/**
 * Whether a series name a query reads is exported: a family itself, or the `_bucket`/`_sum`/`_count`
 * series of a histogram (or summary) family.
 */
export function exported(name: string, declared: ReadonlyMap<string, string>): boolean {
  if (declared.has(name)) return true;
  const m = /^(.*)_(bucket|sum|count)$/.exec(name);
  if (m === null) return false;
  const type = declared.get(m[1]!);
  return type === 'histogram' || (type === 'summary' && m[2] !== 'bucket');
}
