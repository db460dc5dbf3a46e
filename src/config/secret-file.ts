/**
 * Reads the secrets that turn authentication on (the management token, the inference API keys)
 * from the files the config or the environment names. Secrets live in files so they are never on
 * a command line; a named file that cannot give a secret stops the start (fail closed), and the
 * messages name the key and the path, never the content.
 */
import { readFileSync } from 'node:fs';
import { ConfigError } from '../core/errors.ts';
import { API_KEYS_ENV, MANAGEMENT_TOKEN_ENV } from '../core/secret-env.ts';

export { API_KEYS_ENV, MANAGEMENT_TOKEN_ENV };

/** The key and path that name a secret file: the env variable wins over the config key. */
function pick(envName: string, configKey: string, configured: string | undefined, env: Record<string, string | undefined>) {
  const fromEnv = env[envName];
  return fromEnv !== undefined && fromEnv !== '' ? { key: envName, path: fromEnv } : { key: configKey, path: configured };
}

function readText(key: string, path: string): string {
  try {
    return readFileSync(path, 'utf8');
  } catch (err) {
    throw new ConfigError(`${key}: cannot read ${path}: ${(err as NodeJS.ErrnoException).code ?? String(err)}`);
  }
}

/**
 * The management token (the file's content without surrounding whitespace), or undefined when
 * neither `PDLINK_MANAGEMENT_TOKEN_FILE` nor the config key names a file.
 * @example const token = readManagementToken(file.pdlink?.auth?.management_token_file, process.env);
 */
export function readManagementToken(configured: string | undefined, env: Record<string, string | undefined>): string | undefined {
  const { key, path } = pick(MANAGEMENT_TOKEN_ENV, 'pdlink.auth.management_token_file', configured, env);
  if (path === undefined) return undefined;
  const token = readText(key, path).trim();
  if (token === '') throw new ConfigError(`${key}: ${path} is empty`);
  if (/\s/.test(token)) throw new ConfigError(`${key}: ${path} must hold one token on one line`);
  return token;
}

/**
 * The inference API keys, one per line; blank lines and lines starting with `#` are skipped.
 * Undefined when no file is named; a file without any key stops the start.
 * @example const keys = readApiKeys(file.pdlink?.auth?.api_keys_file, process.env);
 */
export function readApiKeys(configured: string | undefined, env: Record<string, string | undefined>): string[] | undefined {
  return readApiKeyFile(configured, env)?.keys;
}

/** The API keys file: every key, and the tenant each named key belongs to. */
export interface ApiKeyFile {
  readonly keys: string[];
  /** Tenant by key, for the lines written `TENANT KEY`; admission counts the key's requests against it. */
  readonly tenants: Map<string, string>;
}

/** A tenant name as admission takes it (schema/admission-config.ts). */
const TENANT = /^[A-Za-z0-9][A-Za-z0-9._:-]{0,63}$/;

/**
 * The API keys file: a line is `KEY`, or `TENANT KEY` to name the tenant the key's requests belong
 * to; blank lines and lines starting with `#` are skipped. Undefined when no file is named.
 * @example const { keys, tenants } = readApiKeyFile(file.pdlink?.auth?.api_keys_file, process.env) ?? {};
 */
export function readApiKeyFile(configured: string | undefined, env: Record<string, string | undefined>): ApiKeyFile | undefined {
  const { key, path } = pick(API_KEYS_ENV, 'pdlink.auth.api_keys_file', configured, env);
  if (path === undefined) return undefined;
  const lines = readText(key, path)
    .split('\n')
    .map((line) => line.trim())
    .filter((line) => line !== '' && !line.startsWith('#'));
  if (lines.length === 0) throw new ConfigError(`${key}: ${path} holds no key`);
  const keys: string[] = [];
  const tenants = new Map<string, string>();
  lines.forEach((line, i) => {
    const fields = line.split(/\s+/);
    if (fields.length > 2) throw new ConfigError(`${key}: ${path}: key ${i + 1} contains whitespace (a line is KEY or TENANT KEY)`);
    if (fields.length === 2) {
      // The message names the line, never the secret.
      if (!TENANT.test(fields[0]!))
        throw new ConfigError(`${key}: ${path}: line ${i + 1}: the tenant must be 1 to 64 of A-Z a-z 0-9 . _ : -`);
      tenants.set(fields[1]!, fields[0]!);
    }
    keys.push(fields.at(-1)!);
  });
  return { keys, tenants };
}
