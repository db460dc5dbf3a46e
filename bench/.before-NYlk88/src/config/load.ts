/**
 * Reads and validates a JSON configuration file; every failure is a ConfigError naming the file,
 * the key and the reason.
 */
import { readFileSync, statSync } from 'node:fs';
import * as v from 'valibot';
import { ConfigError, describeIssues } from '../core/errors.ts';
import { parseOrRefuse } from '../schema/issues.ts';

/** Largest configuration file accepted, as MindIE's server does. */
export const MAX_CONFIG_BYTES = 10 * 1024 * 1024;

/**
 * Loads `path` and validates it against `schema`.
 * @example const file = loadConfigFile('ms_coordinator.json', CoordinatorConfigFile);
 */
export function loadConfigFile<S extends v.GenericSchema>(path: string, schema: S): v.InferOutput<S> {
  let text: string;
  try {
    const size = statSync(path).size;
    if (size === 0 || size > MAX_CONFIG_BYTES) {
      throw new ConfigError(`config file ${path}: size must be in (0, ${MAX_CONFIG_BYTES}] bytes, got ${size}`);
    }
    text = readFileSync(path, 'utf8');
  } catch (cause) {
    if (cause instanceof ConfigError) throw cause;
    throw new ConfigError(`config file ${path}: cannot read: ${(cause as Error).message}`);
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (cause) {
    throw new ConfigError(`config file ${path}: not valid JSON: ${(cause as Error).message}`);
  }
  return parseOrRefuse(schema, json, (issues) => new ConfigError(`config file ${path}: ${describeIssues(issues)}`));
}
