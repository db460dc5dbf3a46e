/**
 * Reads the JSON body of a standard `Request` with the checks every pdlink listener needs: content
 * type, size limit (counted while streaming, so a lying or missing Content-Length cannot bypass it),
 * empty body, nesting depth and exact integers (exact-json.ts). A client that closes its connection
 * mid-body is its own event (`client_closed`), not a fault of the server. It needs no web framework,
 * so the engine simulator reads its bodies the same way pdlink's routes do.
 */
import { errors } from '../core/errors.ts';
import { parseJsonExact } from '../core/exact-json.ts';
import { nextTurn, turnAfter } from '../core/turns.ts';

export interface ReadJsonOptions {
  /** Maximum body size in bytes. */
  limitBytes: number;
  /**
   * Turns the checked text into a value; default parseJsonExact. A route that knows its bodies may
   * parse them its own way, as long as it refuses what parseJsonExact refuses (refresh-plain.ts).
   */
  parse?: (text: string) => unknown;
}

/**
 * Returns the parsed body, or rejects with the PdlinkError the listener should answer with.
 * @example const body = await readJsonRequest(request, { limitBytes: 1 << 20 });
 */
export function readJsonRequest(request: Request, options: ReadJsonOptions): Promise<unknown> {
  return jsonRequestReader(options)(request);
}

/**
 * readJsonRequest with its options fixed: a route that reads every request's body this way makes
 * its reader once, and a body then costs no new function beyond the one that classifies a failed
 * read (it needs the request).
 * @example const read = jsonRequestReader({ limitBytes: 1 << 20 }); const body = await read(request);
 */
export function jsonRequestReader(options: ReadJsonOptions): (request: Request) => Promise<unknown> {
  const limitBytes = options.limitBytes;
  const parse = options.parse ?? parseJsonExact;
  const parsed = (body: string): unknown => {
    // In-process callers (app.request) are not bound by framing: a short declared length proves nothing.
    // A UTF-16 code unit is at most 3 bytes of UTF-8: the byte count is needed only near the limit.
    if (body.length > limitBytes || (body.length * 3 > limitBytes && Buffer.byteLength(body) > limitBytes))
      throw errors.bodyTooLarge(limitBytes);
    // A large body was just decoded in this turn: it is parsed in a turn of its own (turns.ts).
    const turn = turnAfter(body.length);
    if (turn === undefined) return parse(body);
    return turn.then(() => {
      const value = parse(body);
      return nextTurn().then(() => value);
    });
  };
  // One promise from the body read to the value: an async function per step was a promise and a
  // turn of the microtask queue each, on every request of every listener.
  return (request) => {
    try {
      const contentType = request.headers.get('content-type') ?? undefined;
      if (!isJsonContentType(contentType)) throw errors.wrongContentType(contentType);
      const lengthHeader = request.headers.get('content-length');
      const declared = lengthHeader === null ? Number.NaN : Number(lengthHeader);
      if (declared > limitBytes) throw errors.bodyTooLarge(limitBytes);
      // A declared length is enforced by the HTTP framing, so the body can be read in one go; without
      // one (chunked), bytes are counted as they stream in.
      const text = Number.isInteger(declared) ? request.text() : readTextWithLimit(request, limitBytes);
      return text.then(parsed, (err: unknown) => {
        // Bun rejects the body read with an AbortError when the peer goes away mid-body.
        if (request.signal.aborted || (err instanceof Error && err.name === 'AbortError')) throw errors.clientClosed(err);
        throw err;
      });
    } catch (err) {
      return Promise.reject(err);
    }
  };
}

function isJsonContentType(value: string | undefined): boolean {
  if (value === undefined) return false;
  if (value === 'application/json') return true; // what nearly every client sends, told without allocating

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
