/**
 * Reads a JSON request body with the checks every pdlink route needs: content type, size limit
 * (counted while streaming, so a lying or missing Content-Length cannot bypass it), empty body,
 * nesting depth (before parsing, see json-depth.ts), malformed JSON, and integers that JSON
 * numbers cannot carry exactly. A client that closes its connection mid-body is its own event
 * (`client_closed`), not a fault of the server.
 */
import type { Context } from 'hono';
import { errors } from '../core/errors.ts';
import { depthOverflowAt, MAX_JSON_DEPTH } from '../core/json-depth.ts';

/** Marker left in place of an integer literal beyond ±(2^53−1), so schemas can reject it by path. */
export class UnsafeInteger {
  constructor(readonly source: string) {}

  /** Serialises as the original digits, so the value round-trips exactly. */
  toJSON(): unknown {
    return (JSON as unknown as { rawJSON(text: string): unknown }).rawJSON(this.source);
  }
}

export interface ReadJsonOptions {
  /** Maximum body size in bytes. */
  limitBytes: number;
}

/**
 * Returns the parsed body, or throws the PdlinkError the route should answer with.
 * @example const body = await readJsonBody(c, { limitBytes: 1 << 20 });
 */
export async function readJsonBody(c: Context, options: ReadJsonOptions): Promise<unknown> {
  const contentType = c.req.header('content-type');
  if (!isJsonContentType(contentType)) throw errors.wrongContentType(contentType);
  const lengthHeader = c.req.header('content-length');
  const declared = lengthHeader === undefined ? Number.NaN : Number(lengthHeader);
  if (declared > options.limitBytes) throw errors.bodyTooLarge(options.limitBytes);
  // A declared length is enforced by the HTTP framing, so the body can be read in one go; without
  // one (chunked), bytes are counted as they stream in.
  const text = await readText(c.req.raw, Number.isInteger(declared), options.limitBytes);
  // In-process callers (app.request) are not bound by framing: a short declared length proves nothing.
  if (text.length > options.limitBytes || Buffer.byteLength(text) > options.limitBytes) throw errors.bodyTooLarge(options.limitBytes);
  return parseJsonExact(text);
}

async function readText(request: Request, framed: boolean, limitBytes: number): Promise<string> {
  try {
    return framed ? await request.text() : await readTextWithLimit(request, limitBytes);
  } catch (err) {
    // Bun rejects the body read with an AbortError when the peer goes away mid-body.
    if (request.signal.aborted || (err instanceof Error && err.name === 'AbortError')) throw errors.clientClosed(err);
    throw err;
  }
}

/**
 * Parses JSON text, replacing integers that would lose precision by `UnsafeInteger` markers. Text
 * nested deeper than MAX_JSON_DEPTH is refused before it is parsed, so every value this returns can
 * be compared and serialised by recursive code.
 */
export function parseJsonExact(text: string): unknown {
  const tooDeepAt = depthOverflowAt(text, MAX_JSON_DEPTH);
  if (tooDeepAt >= 0) throw errors.nestedTooDeep(MAX_JSON_DEPTH, tooDeepAt);
  let value: unknown;
  try {
    // Only a run of 16+ digits can hold an integer beyond 2^53-1; the reviver costs ~10x, so it
    // runs only when such a run exists.
    value = LONG_DIGIT_RUN.test(text) ? JSON.parse(text, exactReviver) : JSON.parse(text);
  } catch (cause) {
    if (text.trim() === '') throw errors.emptyBody();
    throw errors.malformedJson(cause);
  }
  if (typeof value === 'object' && value !== null) measured.add(value);
  return value;
}

/** The values parseJsonExact returned, held weakly: their depth was measured on the text. */
const measured = new WeakSet<object>();

/**
 * Whether `value` is one parseJsonExact returned, so nests at most MAX_JSON_DEPTH levels (pdlink
 * does not modify parsed bodies). Lets code that must bound values built by anyone (the registry)
 * skip walking the ones it knows.
 * @example if (!isMeasuredJson(snapshot)) checkEveryInstance(snapshot);
 */
export function isMeasuredJson(value: unknown): boolean {
  return typeof value === 'object' && value !== null && measured.has(value);
}

const LONG_DIGIT_RUN = /\d{16}/;

function exactReviver(this: unknown, _key: string, value: unknown, context?: { source?: string }): unknown {
  const source = context?.source;
  if (typeof value === 'number' && !Number.isSafeInteger(value) && source !== undefined && /^-?\d+$/.test(source)) {
    return new UnsafeInteger(source);
  }
  return value;
}

function isJsonContentType(value: string | undefined): boolean {
  if (value === undefined) return false;
  const mediaType = value.split(';', 1)[0]!.trim().toLowerCase();
  return mediaType === 'application/json' || (mediaType.startsWith('application/') && mediaType.endsWith('+json'));
}

async function readTextWithLimit(request: Request, limitBytes: number): Promise<string> {
  if (request.body === null) return '';
  const reader = request.body.getReader();
  const chunks: Uint8Array[] = [];
  let total = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    total += value.byteLength;
    if (total > limitBytes) {
      await reader.cancel().catch(() => {});
      throw errors.bodyTooLarge(limitBytes);
    }
    chunks.push(value);
  }
  return new TextDecoder().decode(Buffer.concat(chunks));
}
