/**
 * Refresh bodies that moved only loads, recognised as text. The Controller resends the whole
 * topology every second, and between two changes of the topology only the free slots and blocks of
 * its instances move. Such a body is the last accepted text with some digit runs replaced: the
 * parts between the load values are equal, character for character. A LoadsTemplate keeps those
 * parts of an accepted plain snapshot's text (see SNAPSHOT_PLAIN) and the totals each load is
 * bounded by; `read` matches a new text against the parts and reads the loads, with no parse, no
 * object built and no field checked again but the loads. A text that differs anywhere else, or
 * writes a load in any other way than a plain decimal integer, is not matched and goes the whole
 * way (parse, check, apply).
 *
 * Why the match is exact: the parts are equal text and each load is a JSON integer literal
 * followed by the same character as before (never a digit, `.`, `e` or `E`), so the new text
 * parses to the accepted snapshot with those loads replaced, and nothing else. That snapshot is
 * valid when each load is within its instance's total, which `read` checks. The loads are located
 * in the accepted text by their keys, only in a text without a backslash (so no key is written
 * with escapes), and the template is made only when exactly one free slots and one free blocks key
 * per instance were found, in the instances' order, with the values the parse gave: a key
 * repeated in an object, or in an object that a later one of the same name shadows, adds loads
 * and is refused.
 */
import type { RefreshSnapshot } from './refresh.ts';

const COLON = 0x3a;
const COMMA = 0x2c;
const CLOSE_BRACE = 0x7d;
const DIGIT_0 = 0x30;
const DIGIT_9 = 0x39;
/** Both load keys, quoted, are as long and begin alike. */
const SLOTS_KEY_QUOTED = '"avail_slots_num"';
const BLOCKS_KEY_QUOTED = '"avail_block_num"';
const LOAD_PREFIX = '"avail_';
/** A load is at most a total, and a total at most 2^32−1: ten digits. */
const LOAD_DIGITS_MAX = 10;

/**
 * The text of an accepted plain snapshot with its loads cut out, and the total each load is bounded by.
 * @example const template = LoadsTemplate.of(text, snapshot); const loads = template?.read(next);
 */
export class LoadsTemplate {
  /** 2n + 1 parts: the text before the first load, between each two, after the last. */
  readonly #parts: readonly string[];
  /** 2n totals: instance i's slots at 2i, its blocks at 2i + 1. */
  readonly #totals: Uint32Array;

  private constructor(parts: readonly string[], totals: Uint32Array) {
    this.#parts = parts;
    this.#totals = totals;
  }

  /** Instances of the snapshot the template was made from. */
  get instances(): number {
    return this.#totals.length / 2;
  }

  /**
   * The template of `text`, the body that parsed to `snapshot`, a valid snapshot with only the
   * schema's keys (SNAPSHOT_PLAIN); undefined when its loads cannot be located exactly (written
   * other than as plain decimal integers, or keys repeated).
   * @example LoadsTemplate.of('{"ids":[0],"instances":[{…"avail_slots_num":3,"avail_block_num":9}}]}', snapshot)
   */
  static of(text: string, snapshot: RefreshSnapshot): LoadsTemplate | undefined {
    // Without a backslash, every quote of valid JSON opens or closes a string, so a match of a
    // quoted load name followed by a colon is that key, written as is; the search needs no walk
    // through the strings. A text with escapes anywhere is not templated.
    if (text.indexOf('\\') >= 0) return undefined;
    const instances = snapshot.instances;
    const loads = 2 * instances.length;
    const parts: string[] = [];
    const totals = new Uint32Array(loads);
    let from = 0;
    for (let at = text.indexOf(LOAD_PREFIX); at >= 0; at = text.indexOf(LOAD_PREFIX, at + 1)) {
      const slots = text.startsWith(SLOTS_KEY_QUOTED, at);
      if (!slots && !text.startsWith(BLOCKS_KEY_QUOTED, at)) continue;
      const colon = skipSpace(text, at + SLOTS_KEY_QUOTED.length);
      // A string value that happens to be a load's name.
      if (text.charCodeAt(colon) !== COLON) continue;
      // Slots then blocks, once per instance, in the instances' order: a repeated key is refused.
      const k = parts.length;
      if (k === loads || slots !== ((k & 1) === 0)) return undefined;
      const start = skipSpace(text, colon + 1);
      const stop = digitsEnd(text, start);
      if (stop === start || !endsValue(text.charCodeAt(stop))) return undefined;
      const instance = instances[k >> 1]!;
      const value = Number(text.slice(start, stop));
      if (slots) {
        if (value !== instance.dynamic_info.avail_slots_num) return undefined;
        totals[k] = instance.static_info.total_slots_num;
      } else {
        if (value !== instance.dynamic_info.avail_block_num) return undefined;
        totals[k] = instance.static_info.total_block_num;
      }
      parts.push(text.slice(from, start));
      from = stop;
      at = stop - 1;
    }
    if (parts.length !== loads) return undefined;
    parts.push(text.slice(from));
    return new LoadsTemplate(parts, totals);
  }

  /**
   * The loads of `text` when it is the template's text with only loads changed, each a plain
   * decimal integer within its total: instance i's free slots at 2i, its free blocks at 2i + 1.
   * Otherwise undefined (the text is to be parsed and checked).
   * @example const loads = template.read(body); if (loads) registry.applyLoads(loads);
   */
  read(text: string): Uint32Array | undefined {
    const parts = this.#parts;
    const totals = this.#totals;
    const m = totals.length;
    const loads = new Uint32Array(m);
    let at = 0;
    for (let k = 0; k < m; k++) {
      const part = parts[k]!;
      if (!text.startsWith(part, at)) return undefined;
      at += part.length;
      // A JSON integer: 0, or a digit 1–9 and more digits. What follows must be the next part,
      // which begins with what followed the load before: never a digit, `.`, `e` or `E`.
      const first = text.charCodeAt(at);
      if (first < DIGIT_0 || first > DIGIT_9) return undefined;
      let value = first - DIGIT_0;
      let j = at + 1;
      if (value !== 0) {
        const stop = Math.min(text.length, at + LOAD_DIGITS_MAX);
        for (; j < stop; j++) {
          const c = text.charCodeAt(j);
          if (c < DIGIT_0 || c > DIGIT_9) break;
          value = value * 10 + (c - DIGIT_0);
        }
      }
      if (value > totals[k]!) return undefined;
      loads[k] = value;
      at = j;
    }
    const last = parts[m]!;
    return text.length === at + last.length && text.startsWith(last, at) ? loads : undefined;
  }
}

/** JSON's whitespace: space, tab, line feed, carriage return. */
function skipSpace(text: string, at: number): number {
  for (;;) {
    const c = text.charCodeAt(at);
    if (c !== 0x20 && c !== 0x09 && c !== 0x0a && c !== 0x0d) return at;
    at++;
  }
}

function digitsEnd(text: string, at: number): number {
  for (;;) {
    const c = text.charCodeAt(at);
    if (c < DIGIT_0 || c > DIGIT_9) return at;
    at++;
  }
}

/** What may follow a load written as a plain integer: whitespace, or the end of its member. */
function endsValue(c: number): boolean {
  return c === COMMA || c === CLOSE_BRACE || c === 0x20 || c === 0x09 || c === 0x0a || c === 0x0d;
}
