/**
 * A leg's request as the socket client (h1-client.ts) writes it: `POST`, the Host line, the leg's
 * headers, Content-Length and the body. Header names and values are refused as fetch refuses
 * them (a TypeError), and so are the framing headers the client writes itself.
 */

/** Framing headers the client writes itself: a caller's would contradict them. */
const OWN_HEADERS: ReadonlySet<string> = new Set(['host', 'content-length', 'transfer-encoding', 'connection']);

/** Header names fetch accepts (RFC 9110 tokens) and values (no NUL, CR or LF; Latin-1). */
const HEADER_NAME = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
// eslint-disable-next-line no-control-regex
const BAD_VALUE = /[\0\r\n\u0100-\uffff]/;
/** Anything but printable ASCII and tabs: such a value is looked at closer. */
// eslint-disable-next-line no-control-regex
const NOT_PLAIN = /[^\t\x20-\x7e]/;
const LATIN1 = /[\u0080-\u00ff]/;

/** Header names already found acceptable: a leg sends the same few names on every request. */
const goodNames = new Set<string>();

function checkName(name: string): void {
  if (!HEADER_NAME.test(name)) throw new TypeError(`invalid header name ${JSON.stringify(name)}`);
  if (OWN_HEADERS.has(name.toLowerCase())) throw new TypeError(`header ${name} is set by the client itself`);
  if (goodNames.size >= 1024) goodNames.clear();
  goodNames.add(name);
}

/**
 * The request: its head in Latin-1, as fetch sends header values, and its body in UTF-8.
 * @example socket.write(requestOf('/v1/completions', 'host: 10.0.0.5:1025\r\n', headers, body));
 */
export function requestOf(path: string, hostLine: string, headers: Readonly<Record<string, string>>, body: string): string | Uint8Array {
  let head = `POST ${path} HTTP/1.1\r\n${hostLine}`;
  let latin1 = false;
  for (const name in headers) {
    const value = headers[name]!;
    if (!goodNames.has(name)) checkName(name);
    if (NOT_PLAIN.test(value)) {
      if (BAD_VALUE.test(value)) throw new TypeError(`invalid value for header ${name}`);
      latin1 ||= LATIN1.test(value);
    }
    head += `${name}: ${value.trim()}\r\n`;
  }
  const bodyBytes = Buffer.byteLength(body);
  head += `content-length: ${bodyBytes}\r\n\r\n`;
  // An ASCII head goes out as one string, which the socket writes as UTF-8 with its body; a head
  // with Latin-1 values is written byte for byte, as fetch writes it.
  if (!latin1) return head + body;
  const bytes = Buffer.allocUnsafe(head.length + bodyBytes);
  bytes.write(head, 0, 'latin1');
  bytes.write(body, head.length, 'utf8');
  return bytes;
}
