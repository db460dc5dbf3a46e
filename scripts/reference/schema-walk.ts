/**
 * Reads a Valibot schema as the configuration reference shows it: one row per key, with its
 * dotted path (`[]` for the items of an array), its type and its constraints, taken from the
 * schema's own validation actions, and the default an `optional` carries. Only the parts of
 * Valibot the configuration schemas use are read; anything else is named by its Valibot type.
 */

/** The parts of a Valibot schema or action this reads. */
interface Node {
  readonly kind?: string;
  readonly type: string;
  readonly expects?: string;
  readonly pipe?: readonly Node[];
  readonly entries?: Record<string, Node>;
  readonly wrapped?: Node;
  readonly item?: Node;
  readonly options?: readonly (Node | string | number)[];
  readonly literal?: unknown;
  readonly default?: unknown;
  readonly requirement?: unknown;
  readonly description?: string;
  readonly message?: unknown;
}

export interface KeyRow {
  /** `request_limit.max_requests`, `instances[].devices[].ip`. */
  readonly path: string;
  readonly type: string;
  /** Constraints in words, e.g. `1–90000`; empty when none. */
  readonly constraint: string;
  /** True when the key may be left out. */
  readonly optional: boolean;
  /** The default the schema itself fills in, as JSON; undefined when the schema has none. */
  readonly schemaDefault: string | undefined;
  /** True for an object whose keys are listed as rows of their own. */
  readonly section: boolean;
}

/**
 * Every key of an object schema, depth first in the schema's order.
 * @example keyRows(CoordinatorConfigFile).map((r) => r.path) // ['http_config', 'http_config.predict_ip', ...]
 */
export function keyRows(schema: unknown): KeyRow[] {
  const rows: KeyRow[] = [];
  const object = objectOf(schema as Node);
  if (object === undefined) throw new TypeError('keyRows: the schema is not an object schema');
  walkEntries(object, '', rows);
  return rows;
}

function walkEntries(node: Node, prefix: string, rows: KeyRow[]): void {
  for (const [key, child] of Object.entries(node.entries ?? {})) walkKey(child, `${prefix}${key}`, rows);
}

function walkKey(node: Node, path: string, rows: KeyRow[]): void {
  let optional = false;
  let schemaDefault: string | undefined;
  let inner = node;
  while (inner.type === 'optional' || inner.type === 'exact_optional' || inner.type === 'nullish' || inner.type === 'nullable') {
    optional ||= inner.type !== 'nullable';
    if (inner.default !== undefined && typeof inner.default !== 'function') schemaDefault = JSON.stringify(inner.default);
    inner = inner.wrapped!;
  }
  const object = objectOf(inner);
  rows.push({ path, type: typeName(inner), constraint: constraints(inner), optional, schemaDefault, section: object !== undefined });
  if (object !== undefined) walkEntries(object, `${path}.`, rows);
  const items = arrayItem(inner);
  if (items !== undefined && objectOf(items) !== undefined) walkEntries(objectOf(items)!, `${path}[].`, rows);
}

const OBJECT_TYPES = new Set(['object', 'loose_object', 'strict_object', 'object_with_rest']);

/** The object schema of a node: itself, or an object schema among the steps of its pipe. */
function objectOf(node: Node): Node | undefined {
  if (OBJECT_TYPES.has(node.type)) return node;
  return node.pipe?.find((step) => step.kind === 'schema' && OBJECT_TYPES.has(step.type));
}

function arrayItem(node: Node): Node | undefined {
  return node.type === 'array' ? node.item : undefined;
}

function actions(node: Node): Node[] {
  return (node.pipe ?? []).filter((step) => step.kind === 'validation' || step.kind === 'transformation');
}

/** A type as a reader of the file writes it. */
export function typeName(node: Node): string {
  if (objectOf(node) !== undefined) return 'object';
  switch (node.type) {
    case 'number':
      return actions(node).some((a) => a.type === 'integer') ? 'integer' : 'number';
    case 'string': {
      // An address checked by hand (node:net's isIP) says so in its message.
      const ip = actions(node).some((a) => a.type === 'ip' || (a.type === 'check' && /\bIP(v4|v6)?\b/.test(String(a.message))));
      return ip ? 'IP address' : actions(node).some((a) => a.type === 'url') ? 'URL' : 'string';
    }
    case 'boolean':
      return 'boolean';
    case 'array': {
      const item = node.item!;
      return `array of ${OBJECT_TYPES.has(item.type) ? 'objects' : plural(typeName(item))}`;
    }
    case 'picklist':
      return 'string';
    case 'literal':
      return JSON.stringify(node.literal);
    case 'union': {
      const names = [...new Set((node.options as Node[]).map(typeName))];
      return names.join(' or ');
    }
    case 'custom': {
      // A custom check first in a pipe (a marker refused before the type): the type is the pipe's schema step's.
      const typed = node.pipe?.find((step) => step.kind === 'schema' && step.type !== 'custom');
      return typed !== undefined ? typeName(node.pipe === undefined ? typed : { ...typed, pipe: node.pipe }) : 'value';
    }
    default:
      return node.type;
  }
}

function plural(name: string): string {
  return name === 'IP address' ? 'IP addresses' : name.endsWith('s') ? name : `${name}s`;
}

/** The schema's constraints in words: ranges, lengths, choices. */
export function constraints(node: Node): string {
  const parts: string[] = [];
  if (node.type === 'picklist') parts.push(`one of ${(node.options as string[]).map((o) => `\`${o}\``).join(', ')}`);
  if (node.type === 'union') {
    const inner = (node.options as Node[]).map(constraints).filter((c) => c !== '');
    parts.push(...new Set(inner));
  }
  const steps = actions(node);
  const min = steps.find((a) => a.type === 'min_value')?.requirement;
  const max = steps.find((a) => a.type === 'max_value')?.requirement;
  if (min !== undefined && max !== undefined) parts.push(`${fmt(min)}–${fmt(max)}`);
  else if (min !== undefined) parts.push(`≥ ${fmt(min)}`);
  else if (max !== undefined) parts.push(`≤ ${fmt(max)}`);
  const minLength = steps.find((a) => a.type === 'min_length')?.requirement;
  const maxLength = steps.find((a) => a.type === 'max_length')?.requirement;
  const unit = node.type === 'array' ? 'items' : 'characters';
  if (minLength !== undefined && maxLength !== undefined) parts.push(`${fmt(minLength)}–${fmt(maxLength)} ${unit}`);
  else if (minLength !== undefined && minLength !== 1) parts.push(`at least ${fmt(minLength)} ${unit}`);
  else if (minLength === 1) parts.push(node.type === 'array' ? 'not empty' : 'not empty');
  else if (maxLength !== undefined) parts.push(`at most ${fmt(maxLength)} ${unit}`);
  const regex = steps.find((a) => a.type === 'regex')?.requirement;
  if (regex instanceof RegExp) parts.push(`matches \`${regex.source}\``);
  if (node.type === 'array' && node.item !== undefined && !OBJECT_TYPES.has(node.item.type)) {
    const inner = constraints(node.item);
    if (inner !== '') parts.push(`each ${inner}`);
  }
  return parts.join('; ');
}

function fmt(value: unknown): string {
  return typeof value === 'number' && Number.isInteger(value) && Math.abs(value) >= 10_000
    ? value.toLocaleString('en-US').replace(/,/g, ' ')
    : String(value);
}
