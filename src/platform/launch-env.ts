/**
 * The platform settings every pdlink process starts with. Bun reads them only when it starts, so they
 * cannot be set from inside: `bin/pdlink` (and `src/main.ts`'s first line) put them in the
 * environment, and whatever starts pdlink's processes itself (the simulated cluster, benchmarks)
 * takes them from here so it runs them as shipped. A value the caller already set wins.
 *
 * - `BUN_CONFIG_MAX_HTTP_REQUESTS`: Bun's fetch otherwise runs at most 256 requests at once, too few
 *   for the proxy.
 * - `BUN_JSC_forceRAMSize`: the JS engine sizes its heap's growth between collections by the
 *   machine's memory. Under proxy load each minor collection promotes the state of the requests in
 *   flight, which dies soon after, and on a machine with gigabytes the major collection that frees
 *   it comes only once the old generation has grown to 3–4 times its live size (≈ 11 → 40 MiB): the
 *   Coordinator's RSS then swings between ≈ 85 and ≈ 130 MiB. With a 256 MiB budget it stays
 *   between ≈ 85 and ≈ 98 MiB and its CPU per proxied request did not rise (bench/rss.bench.ts).
 *   It is a sizing hint, not a limit: a heap beyond it still grows, collected more often.
 */

/** The defaults, exactly as `bin/pdlink` sets them. */
export const LAUNCH_ENV: Readonly<Record<string, string>> = {
  BUN_CONFIG_MAX_HTTP_REQUESTS: '65535',
  BUN_JSC_forceRAMSize: String(256 * 2 ** 20),
};

/**
 * The launch settings for a child pdlink process: the defaults, each under the value `env` already has.
 * @example spawn(bun, [main, 'coordinator'], { env: { ...process.env, ...launchEnv() } })
 */
export function launchEnv(env: Readonly<Record<string, string | undefined>> = process.env): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(LAUNCH_ENV)) out[name] = env[name] ?? value;
  return out;
}
