/**
 * The option values `pdlink bench` reads in both its modes (a run, and `--profile`): numbers and
 * integers in a range, a list of concurrency levels, and the model a server names first; each bad
 * value is a ConfigError naming its option.
 */
import { ConfigError } from '../core/errors.ts';

type Values = Readonly<Partial<Record<string, string>>>;

/**
 * The number option `name`, in its range; `fallback` when absent.
 * @example num(values, 'rate', 1, { min: 0, exclusive: true })
 */
export function num(values: Values, name: string, fallback: number, range: { min: number; max?: number; exclusive?: boolean }): number {
  const text = values[name];
  if (text === undefined) return fallback;
  const value = Number(text);
  const low = range.exclusive === true ? value > range.min : value >= range.min;
  if (text.trim() === '' || !Number.isFinite(value) || !low || (range.max !== undefined && value > range.max)) {
    const bound =
      range.max !== undefined ? `in [${range.min}, ${range.max}]` : range.exclusive === true ? `> ${range.min}` : `≥ ${range.min}`;
    throw new ConfigError(`--${name}: must be a number ${bound}, got ${JSON.stringify(text)}`);
  }
  return value;
}

/**
 * The integer option `name`, at least `min`; `fallback` when absent.
 * @example int(values, 'seed', 1, 0)
 */
export function int(values: Values, name: string, fallback: number, min: number): number {
  const text = values[name];
  if (text === undefined) return fallback;
  if (!/^\d+$/.test(text) || Number(text) < min || !Number.isSafeInteger(Number(text)))
    throw new ConfigError(`--${name}: must be an integer ≥ ${min}, got ${JSON.stringify(text)}`);
  return Number(text);
}

/**
 * A comma-separated list of integers ≥ 1 (`option` names it in the error).
 * @example parseLevels('1,2,4') // [1, 2, 4]
 */
export function parseLevels(text: string, option = 'concurrency'): number[] {
  const levels = text.split(',').map((s) => s.trim());
  if (levels.some((s) => !/^\d+$/.test(s) || Number(s) < 1))
    throw new ConfigError(`--${option}: must be a comma-separated list of integers ≥ 1, got ${JSON.stringify(text)}`);
  return levels.map(Number);
}

/**
 * The first model `GET <baseUrl>/v1/models` lists.
 * @example const model = values.model ?? (await firstModel(baseUrl));
 */
export async function firstModel(baseUrl: string): Promise<string> {
  const url = `${baseUrl.replace(/\/+$/, '')}/v1/models`;
  try {
    const res = await fetch(url, { signal: AbortSignal.timeout(10_000) });
    const body = (await res.json()) as { data?: { id?: unknown }[] };
    const id = body.data?.[0]?.id;
    if (res.ok && typeof id === 'string') return id;
    throw new Error(`answered ${res.status} without a model`);
  } catch (err) {
    throw new ConfigError(`--model: not given, and GET ${url} did not name one (${(err as Error).message}); pass --model`);
  }
}
