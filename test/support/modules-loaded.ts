/**
 * What a fresh process loads for one import, for tests that keep a heavy dependency out of a
 * process that does not use it (resident code is most of an idle Coordinator's memory).
 */

/**
 * The files a fresh Bun process holds after importing `path` (Bun lists ES modules in require.cache too).
 * @example expect((await modulesLoadedBy(file)).some((f) => f.includes('/@opentelemetry/'))).toBe(false);
 */
export async function modulesLoadedBy(path: string): Promise<string[]> {
  const child = Bun.spawn(
    [process.execPath, '-e', `await import(${JSON.stringify(path)}); console.log(JSON.stringify(Object.keys(require.cache)));`],
    { stdout: 'pipe', stderr: 'pipe' },
  );
  const [out, err, code] = await Promise.all([new Response(child.stdout).text(), new Response(child.stderr).text(), child.exited]);
  if (code !== 0) throw new Error(`importing ${path} failed (exit ${code}): ${err}`);
  return JSON.parse(out) as string[];
}
