/**
 * The nesting limit of JSON in pdlink. `JSON.parse` builds values of any depth without trouble, but
 * everything that walks them afterwards (`JSON.stringify`, structural comparison) recurses, and a
 * body of 50,000 nested arrays is only 100 KB. Bodies are therefore measured before they are parsed,
 * with one linear scan of the text (values handed over by code are measured by value-depth.ts).
 * Anything within the limit is safe to recurse over.
 */

export { MAX_JSON_DEPTH } from './limits.ts';

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const OPEN_BRACKET = 0x5b;
const CLOSE_BRACKET = 0x5d;
const OPEN_BRACE = 0x7b;
const CLOSE_BRACE = 0x7d;

/**
 * The index of the first `[` or `{` of `text` nested deeper than `limit`, or -1. Brackets inside
 * strings do not count. The text need not be valid JSON: the scan only bounds the depth, and
 * `JSON.parse` judges the rest.
 * @example depthOverflowAt('[[1]]', 1) // 1
 */
export function depthOverflowAt(text: string, limit: number): number {
  let depth = 0;
  const n = text.length;
  for (let i = 0; i < n; i++) {
    const c = text.charCodeAt(i);
    if (c === QUOTE) i = stringEnd(text, i);
    else if (c === OPEN_BRACKET || c === OPEN_BRACE) {
      if (++depth > limit) return i;
    } else if (c === CLOSE_BRACKET || c === CLOSE_BRACE) depth--;
  }
  return -1;
}

/** The index of the quote closing the string opened at `open` (text.length if none); strings are skipped by search, not by character. */
function stringEnd(text: string, open: number): number {
  let at = open;
  for (;;) {
    at = text.indexOf('"', at + 1);
    if (at < 0) return text.length;
    // A quote preceded by an odd run of backslashes is escaped. Runs between quotes are disjoint,
    // so looking back keeps the scan linear.
    let slashes = 0;
    for (let j = at - 1; text.charCodeAt(j) === BACKSLASH; j--) slashes++;
    if ((slashes & 1) === 0) return at;
  }
}
