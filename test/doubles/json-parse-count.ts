/**
 * Counts the calls a piece of code makes to JSON.parse, for tests that check a body was not parsed
 * again (the exact parse calls JSON.parse too). JSON.parse is restored however `fn` ends.
 */

/**
 * How many times `fn` (and, when it returns a promise, what it awaits) called JSON.parse.
 * @example expect(await parsesIn(() => parseRefreshText(text))).toBe(1);
 */
export async function parsesIn(fn: () => unknown): Promise<number> {
  const original = JSON.parse;
  let calls = 0;
  JSON.parse = ((...args: Parameters<typeof JSON.parse>) => {
    calls++;
    return original(...args);
  }) as typeof JSON.parse;
  try {
    await fn();
  } finally {
    JSON.parse = original;
  }
  return calls;
}
