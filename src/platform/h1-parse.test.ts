import { describe, expect, test } from 'bun:test';
import { H1ParseError, H1Parser, MAX_HEAD_BYTES, type H1Head } from './h1-parse.ts';

const encoder = new TextEncoder();
const decoder = new TextDecoder();

interface Seen {
  heads: H1Head[];
  body: string;
  ends: number;
}

function parserOf(): { parser: H1Parser; seen: Seen } {
  const seen: Seen = { heads: [], body: '', ends: 0 };
  const parser = new H1Parser({
    head: (head) => seen.heads.push(head),
    body: (bytes) => {
      seen.body += decoder.decode(bytes);
    },
    end: () => seen.ends++,
  });
  return { parser, seen };
}

/** Feeds `text` cut at every position (two pieces), and in single bytes; each run must see the same. */
function everySplit(text: string, check: (seen: Seen, parser: H1Parser) => void): void {
  const bytes = encoder.encode(text);
  for (let cut = 0; cut <= bytes.byteLength; cut++) {
    const { parser, seen } = parserOf();
    parser.feed(bytes.subarray(0, cut));
    parser.feed(bytes.subarray(cut));
    check(seen, parser);
  }
  const { parser, seen } = parserOf();
  for (let i = 0; i < bytes.byteLength; i++) parser.feed(bytes.subarray(i, i + 1));
  check(seen, parser);
}

describe('H1Parser', () => {
  test('a Content-Length answer, cut anywhere: one head, the whole body, one end', () => {
    const text = 'HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 11\r\nX-Request-Id: r1\r\n\r\n{"a":"bcd"}';
    everySplit(text, (seen, parser) => {
      expect(seen.heads).toEqual([
        {
          status: 200,
          headers: [
            ['content-type', 'application/json'],
            ['content-length', '11'],
            ['x-request-id', 'r1'],
          ],
          keepAlive: true,
          hasBody: true,
        },
      ]);
      expect(seen.body).toBe('{"a":"bcd"}');
      expect(seen.ends).toBe(1);
      expect(parser.inResponse).toBe(true); // done, until reset for the next request
    });
  });

  test('a chunked answer with extensions and trailers, cut anywhere', () => {
    const text =
      'HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n' +
      '7;ext=1\r\ndata: a\r\n' +
      'A\r\n\n\ndata: bc\r\n' +
      '0\r\nX-Trailer: t\r\n\r\n';
    everySplit(text, (seen) => {
      expect(seen.heads.map((h) => [h.status, h.keepAlive, h.hasBody])).toEqual([[200, true, true]]);
      expect(seen.body).toBe('data: a\n\ndata: bc');
      expect(seen.ends).toBe(1);
    });
  });

  test('the data of several chunks in one piece comes as one event, before the end; one chunk as a view of the piece', () => {
    const events: string[] = [];
    const parser = new H1Parser({
      head: () => events.push('head'),
      body: (bytes) => void events.push(decoder.decode(bytes)),
      end: () => events.push('end'),
    });
    const piece = Buffer.from('HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n9\r\ndata: 1\n\n\r\n9\r\ndata: 2\n\n\r\n9\r\nda');
    parser.feed(piece);
    expect(events).toEqual(['head', 'data: 1\n\ndata: 2\n\nda']);
    const seen: Uint8Array[] = [];
    const alone = new H1Parser({ head: () => {}, body: (bytes) => void seen.push(bytes), end: () => {} });
    const one = Buffer.from('HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n2\r\nok\r\n');
    alone.feed(one);
    expect(seen[0]!.buffer).toBe(one.buffer);
    parser.feed(Buffer.from('ta: 3\n\n\r\n4\r\n[D]\n\r\n0\r\n\r\n'));
    expect(events).toEqual(['head', 'data: 1\n\ndata: 2\n\nda', 'ta: 3\n\n[D]\n', 'end']);
  });

  test('data read before a refusal in the same piece is reported before the refusal', () => {
    const { parser, seen } = parserOf();
    expect(() => parser.feed(Buffer.from('HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n2\r\nok\r\n2\r\nhey\r\n'))).toThrow(
      H1ParseError,
    );
    expect(seen.body).toBe('okhe');
  });

  test('header bytes 0x80-0x9F are read as the characters of the same code, as fetch reads them', () => {
    const { parser, seen } = parserOf();
    const head = Buffer.concat([
      Buffer.from('HTTP/1.1 204 No Content\r\nx-bytes: '),
      Buffer.from([0x80, 0x9f, 0xe9]),
      Buffer.from('\r\n\r\n'),
    ]);
    parser.feed(head);
    expect(seen.heads[0]!.headers).toEqual([['x-bytes', '\u0080\u009f\u00e9']]);
  });

  test('an answer framed by the close ends when the connection closes, and is not kept alive', () => {
    const { parser, seen } = parserOf();
    parser.feed(encoder.encode('HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n\r\nsome '));
    parser.feed(encoder.encode('text'));
    expect(seen.heads[0]!.keepAlive).toBe(false);
    expect(parser.untilClose).toBe(true);
    expect(seen.ends).toBe(0);
    expect(parser.closed()).toBe(true);
    expect(seen.body).toBe('some text');
    expect(seen.ends).toBe(1);
  });

  test('a close before an answer, or in the middle of a framed one, does not end it', () => {
    const { parser, seen } = parserOf();
    parser.feed(encoder.encode('HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc'));
    expect(parser.closed()).toBe(false);
    expect(seen.ends).toBe(0);
    const head = parserOf();
    head.parser.feed(encoder.encode('HTTP/1.1 200 OK\r\nContent-Le'));
    expect(head.parser.closed()).toBe(false);
    const none = parserOf();
    expect(none.parser.closed()).toBe(false);
    expect(none.seen.ends).toBe(0);
  });

  test('interim 1xx heads are skipped; 204, 304 and a zero length have no body', () => {
    everySplit('HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\nHTTP/1.1 204 No Content\r\n\r\n', (seen) => {
      expect(seen.heads.map((h) => [h.status, h.hasBody])).toEqual([[204, false]]);
      expect(seen.ends).toBe(1);
    });
    for (const head of ['HTTP/1.1 304 Not Modified\r\nContent-Length: 5\r\n\r\n', 'HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n']) {
      const { parser, seen } = parserOf();
      parser.feed(encoder.encode(head));
      expect(seen.heads[0]!.hasBody).toBe(false);
      expect(seen.ends).toBe(1);
    }
  });

  test('keep-alive: HTTP/1.1 unless Connection: close; HTTP/1.0 only with keep-alive', () => {
    const keep = (head: string) => {
      const { parser, seen } = parserOf();
      parser.feed(encoder.encode(`${head}Content-Length: 0\r\n\r\n`));
      return seen.heads[0]!.keepAlive;
    };
    expect(keep('HTTP/1.1 200 OK\r\n')).toBe(true);
    expect(keep('HTTP/1.1 200 OK\r\nConnection: Close\r\n')).toBe(false);
    expect(keep('HTTP/1.1 200 OK\r\nConnection: upgrade, close\r\n')).toBe(false);
    expect(keep('HTTP/1.0 200 OK\r\n')).toBe(false);
    expect(keep('HTTP/1.0 200 OK\r\nConnection: keep-alive\r\n')).toBe(true);
  });

  test('Transfer-Encoding wins over Content-Length, and such a connection is not kept', () => {
    const { parser, seen } = parserOf();
    parser.feed(encoder.encode('HTTP/1.1 200 OK\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n'));
    expect(seen.body).toBe('hello');
    expect(seen.heads[0]!.keepAlive).toBe(false);
    expect(seen.ends).toBe(1);
  });

  test('a transfer coding other than chunked last is read until the close', () => {
    const { parser, seen } = parserOf();
    parser.feed(encoder.encode('HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked, gzip\r\n\r\nraw'));
    expect(parser.untilClose).toBe(true);
    expect(seen.heads[0]!.keepAlive).toBe(false);
    parser.closed();
    expect(seen.body).toBe('raw');
  });

  test('reset readies the parser for the next answer on the same connection', () => {
    const { parser, seen } = parserOf();
    parser.feed(encoder.encode('HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\na'));
    parser.reset();
    expect(parser.inResponse).toBe(false);
    parser.feed(encoder.encode('HTTP/1.1 500 Oops\r\nContent-Length: 1\r\n\r\nb'));
    expect(seen.heads.map((h) => h.status)).toEqual([200, 500]);
    expect(seen.body).toBe('ab');
    expect(seen.ends).toBe(2);
  });

  const refused: [string, string, RegExp][] = [
    ['a status line that is not HTTP/1.x', 'HTTP/2 200\r\n\r\n', /bad status line/],
    ['garbage', 'hello\r\n\r\n', /bad status line/],
    ['a header line without a colon', 'HTTP/1.1 200 OK\r\nNoColon\r\n\r\n', /bad header line/],
    ['a header name with a space', 'HTTP/1.1 200 OK\r\nBad Name: x\r\n\r\n', /bad header name/],
    ['a NUL in a header value', 'HTTP/1.1 200 OK\r\nX-Bad: a\u0000b\r\n\r\n', /control character in header x-bad/],
    ['a non-numeric length', 'HTTP/1.1 200 OK\r\nContent-Length: 1x\r\n\r\n', /bad content-length/],
    ['a negative length', 'HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n', /bad content-length/],
    ['two different lengths', 'HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n', /conflicting content-length/],
    ['a protocol switch', 'HTTP/1.1 101 Switching Protocols\r\n\r\n', /101/],
    ['a bad chunk size', 'HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n', /bad chunk size/],
    ['a chunk size with no digits', 'HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n\r\n', /bad chunk size|not ended/],
    ['a chunk size longer than 12 digits', 'HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n1000000000000a\r\n', /bad chunk size/],
    ['a chunk size ended by a bare CR', 'HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\rx', /not ended by CRLF/],
    ['chunk data longer than its size', 'HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n1\r\nab\r\n', /longer than its size/],
    ['a line ended by a bare LF', 'HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n1\n', /not ended by CRLF/],
    ['bytes after the end', 'HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\nab', /after the end/],
  ];
  for (const [what, text, message] of refused) {
    test(`refuses ${what} with H1ParseError`, () => {
      const { parser } = parserOf();
      let caught: unknown;
      try {
        parser.feed(encoder.encode(text));
      } catch (err) {
        caught = err;
      }
      expect(caught).toBeInstanceOf(H1ParseError);
      expect((caught as H1ParseError).code).toBe('HPE_INVALID');
      expect((caught as Error).message).toMatch(message);
    });
  }

  test('a head whose lines end in a bare LF is refused as soon as the first one arrives, in one piece or byte by byte', () => {
    for (const text of [
      'HTTP/1.1 200 OK\ncontent-length: 2\n\nok',
      'HTTP/1.1 200 OK\r\ncontent-length: 2\n\r\nok',
      'HTTP/1.1 200 OK\r\n\n',
    ]) {
      expect(() => parserOf().parser.feed(encoder.encode(text))).toThrow(/bare LF/);
      // Byte by byte, it is refused at the first bare LF, not when the head would have ended.
      const { parser } = parserOf();
      const bytes = encoder.encode(text);
      const bare = bytes.findIndex((b, i) => b === 10 && bytes[i - 1] !== 13);
      for (let i = 0; i < bare; i++) parser.feed(bytes.subarray(i, i + 1));
      expect(() => parser.feed(bytes.subarray(bare, bare + 1))).toThrow(/bare LF/);
    }
  });

  test('a head beyond the limit is refused, in one piece or many', () => {
    const long = `HTTP/1.1 200 OK\r\nX-Big: ${'a'.repeat(MAX_HEAD_BYTES)}\r\n\r\n`;
    expect(() => parserOf().parser.feed(encoder.encode(long))).toThrow(/longer than/);
    const { parser } = parserOf();
    const bytes = encoder.encode(long);
    expect(() => {
      for (let i = 0; i < bytes.byteLength; i += 1000) parser.feed(bytes.subarray(i, i + 1000));
    }).toThrow(/longer than/);
  });

  test('a chunk-size line beyond its limit is refused', () => {
    const { parser } = parserOf();
    parser.feed(encoder.encode('HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n'));
    expect(() => parser.feed(encoder.encode(`1;${'x'.repeat(5000)}`))).toThrow(/longer than/);
  });
});
