/**
 * The head of an HTTP/1.1 response as the socket legs' parser reads it (h1-parse.ts): its status,
 * its header fields and how its body is framed (RFC 9112 §6.3: none for 204 and 304, chunked when
 * Transfer-Encoding ends in chunked, else Content-Length, else until the connection closes), or
 * nothing for an interim 1xx head. What cannot be framed safely throws an H1ParseError.
 */

/** A response that cannot be framed safely: the connection is closed, the leg fails. */
export class H1ParseError extends Error {
  readonly code = 'HPE_INVALID';
  constructor(message: string) {
    super(`malformed HTTP response from the engine: ${message}`);
    this.name = 'H1ParseError';
  }
}

/** How a body is framed: none, by its length, in chunks, or by the connection's close. */
export type Framing = 'none' | 'length' | 'chunked' | 'close';

export interface ParsedHead {
  readonly status: number;
  /** Header fields as sent (names in lower case), in order. */
  readonly headers: [string, string][];
  /** Whether the connection may carry another request once this body is read. */
  readonly keepAlive: boolean;
  readonly framing: Framing;
  /** The body's length when framed by it. */
  readonly length: number;
}

/**
 * Reads a final head's text (without its closing empty line); undefined for an interim 1xx head.
 * Read with indexOf and charCodeAt, not split and a regular expression: two heads per proxied request.
 * @example const head = parseHead('HTTP/1.1 200 OK\r\ncontent-length: 2');
 */
export function parseHead(text: string): ParsedHead | undefined {
  let eol = text.indexOf('\r\n');
  if (eol < 0) eol = text.length;
  const minor = text.charCodeAt(7);
  if (
    eol < 12 ||
    !text.startsWith('HTTP/1.') ||
    (minor !== 48 && minor !== 49) ||
    text.charCodeAt(8) !== 32 ||
    !isDigit(text.charCodeAt(9)) ||
    !isDigit(text.charCodeAt(10)) ||
    !isDigit(text.charCodeAt(11)) ||
    (eol > 12 && text.charCodeAt(12) !== 32)
  ) {
    throw new H1ParseError(`bad status line ${JSON.stringify(text.slice(0, Math.min(eol, 60)))}`);
  }
  const status = (text.charCodeAt(9) - 48) * 100 + (text.charCodeAt(10) - 48) * 10 + (text.charCodeAt(11) - 48);
  const headers: [string, string][] = [];
  let length: number | undefined;
  let chunked = false;
  let transferEncoding = false;
  let connection = '';
  for (let at = eol + 2; at < text.length;) {
    let next = text.indexOf('\r\n', at);
    if (next < 0) next = text.length;
    const colon = text.indexOf(':', at);
    if (colon <= at || colon > next) throw new H1ParseError(`bad header line ${JSON.stringify(text.slice(at, Math.min(next, at + 60)))}`);
    const name = text.slice(at, colon).toLowerCase();
    const value = text.slice(colon + 1, next).trim();
    if (!tokens.has(name)) checkToken(name);
    if (CONTROL.test(value)) throw new H1ParseError(`a control character in header ${name}`);
    at = next + 2;
    if (name === 'content-length') {
      if (!/^\d{1,15}$/.test(value)) throw new H1ParseError(`bad content-length ${JSON.stringify(value.slice(0, 40))}`);
      const declared = Number(value);
      if (length !== undefined && length !== declared) throw new H1ParseError('conflicting content-length headers');
      length = declared;
    } else if (name === 'transfer-encoding') {
      transferEncoding = true;
      chunked = /(?:^|,)\s*chunked\s*$/i.test(value);
    } else if (name === 'connection') connection += `${value.toLowerCase()},`;
    headers.push([name, value]);
  }
  if (status < 200) {
    // An interim answer (100 Continue, 103 Early Hints): the final one follows on the same connection.
    if (status === 101) throw new H1ParseError('an unasked protocol switch (101)');
    return undefined;
  }
  const keepAlive =
    connection === '' ? minor === 49 : minor === 49 ? !/(?:^|,)\s*close\s*,/.test(connection) : /(?:^|,)\s*keep-alive\s*,/.test(connection);
  if (status === 204 || status === 304) return { status, headers, keepAlive, framing: 'none', length: 0 };
  if (transferEncoding) {
    // With both, Transfer-Encoding wins, and a connection framed so ambiguously is not used again.
    if (chunked) return { status, headers, keepAlive: keepAlive && length === undefined, framing: 'chunked', length: 0 };
    return { status, headers, keepAlive: false, framing: 'close', length: 0 };
  }
  if (length !== undefined) return { status, headers, keepAlive, framing: length === 0 ? 'none' : 'length', length };
  return { status, headers, keepAlive: false, framing: 'close', length: 0 };
}

/** A header name (RFC 9110 token, lower case by now), and what a field value must not hold (controls but HTAB). */
const TOKEN = /^[!#$%&'*+\-.^_`|~0-9a-z]+$/;
// eslint-disable-next-line no-control-regex
const CONTROL = /[\0-\x08\x0a-\x1f\x7f]/;

/** Header names already found to be tokens: an engine sends the same few on every answer. */
const tokens = new Set<string>();

function checkToken(name: string): void {
  if (!TOKEN.test(name)) throw new H1ParseError(`bad header name ${JSON.stringify(name.slice(0, 60))}`);
  if (tokens.size >= 1024) tokens.clear();
  tokens.add(name);
}

function isDigit(c: number): boolean {
  return c >= 48 && c <= 57;
}
