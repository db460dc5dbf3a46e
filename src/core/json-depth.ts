/**
 * The nesting limit of JSON in pdlink. `JSON.parse` builds values of any depth without trouble, but
 * everything that walks them afterwards (`JSON.stringify`, structural comparison) recurses, and a
 * body of 50,000 nested arrays is only 100 KB. Bodies are therefore measured before they are parsed,
 * with one linear scan of the text (values handed over by code are measured by value-depth.ts),
 * which also notes whether exact integer parsing is needed. Anything within the limit is safe to
 * recurse over.
 */

export { MAX_JSON_DEPTH } from './limits.ts';

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const OPEN_BRACKET = 0x5b;
const CLOSE_BRACKET = 0x5d;
const OPEN_BRACE = 0x7b;
const CLOSE_BRACE = 0x7d;

/** What one pass over a body's text found; the value returned by scanJsonText when within the limit. */
export const WITHIN_LIMIT = -1;
/** Within the limit, and some run of 16+ digits outside strings: an integer that may need exact parsing. */
export const WITHIN_LIMIT_LONG_DIGITS = -2;

/**
 * The index of the first `[` or `{` of `text` nested deeper than `limit`, or -1. Brackets inside
 * strings do not count. The text need not be valid JSON: the scan only bounds the depth, and
 * `JSON.parse` judges the rest.
 * @example depthOverflowAt('[[1]]', 1) // 1
 */
export function depthOverflowAt(text: string, limit: number): number {
  const at = scanJsonText(text, limit);
  return at >= 0 ? at : -1;
}

/**
 * One pass over `text` that bounds its depth and notes integer literals long enough to lose
 * precision in `JSON.parse` (16+ digits), so the exact parse needs no second scan of the body:
 * the index of the first bracket deeper than `limit`, else WITHIN_LIMIT or WITHIN_LIMIT_LONG_DIGITS.
 * Digits inside strings do not count.
 * @example scanJsonText('{"seed":18446744073709551615}', 64) // WITHIN_LIMIT_LONG_DIGITS
 */
export function scanJsonText(text: string, limit: number): number {
  let depth = 0;
  let longDigits = false;
  const n = text.length;
  for (let i = 0; i < n; i++) {
    const c = text.charCodeAt(i);
    if (c === QUOTE) i = stringEnd(text, i);
    else if (c === OPEN_BRACKET || c === OPEN_BRACE) {
      if (++depth > limit) return i;
    } else if (c === CLOSE_BRACKET || c === CLOSE_BRACE) depth--;
    else if (c >= DIGIT_0 && c <= DIGIT_9) {
      let j = i + 1;
      for (; j < n; j++) {
        const d = text.charCodeAt(j);
        if (d < DIGIT_0 || d > DIGIT_9) break;
      }
      if (j - i >= LONG_DIGIT_RUN) longDigits = true;
      i = j - 1;
    }
  }
  return longDigits ? WITHIN_LIMIT_LONG_DIGITS : WITHIN_LIMIT;
}

/** Only a run of this many digits can hold an integer beyond 2^53-1. */
const LONG_DIGIT_RUN = 16;
const DIGIT_0 = 0x30;
const DIGIT_9 = 0x39;
/**
 * Strings up to this length are walked character by character: most strings of a body are keys and
 * short values, where a call to indexOf costs about as much as the walk (within noise of the
 * search-only scan on a 4096-instance refresh, the digit check included); longer ones (prompts)
 * go to indexOf, which is far faster over long runs.
 */
const SHORT_STRING = 32;

/** The index of the quote closing the string opened at `open` (text.length if none). */
function stringEnd(text: string, open: number): number {
  const n = text.length;
  const stop = Math.min(n, open + 1 + SHORT_STRING);
  let i = open + 1;
  for (; i < stop; i++) {
    const c = text.charCodeAt(i);
    if (c === QUOTE) return i;
    if (c === BACKSLASH) i++;
  }
  return i >= n ? n : longStringEnd(text, i - 1);
}

/** stringEnd past the short prefix: strings are skipped by search, not by character. */
function longStringEnd(text: string, from: number): number {
  let at = from;
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
