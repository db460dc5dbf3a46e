/**
 * Engine answers the proxy refuses to use, whatever their status: one larger than
 * `pdlink.proxy.max_answer_bytes` (a P answer, a non-streamed D answer, an error body), and one
 * encoded (`Content-Encoding` other than identity) although every leg asks for identity. Either
 * is the engine's doing, never the client's: the leg fails as a broken answer (P tried elsewhere,
 * D reported), the request alone fails with a message that says what the engine did, and the
 * answer's connection is closed rather than read on.
 */
import type { LegAnswer } from '../../platform/platform.ts';

/** What every leg asks of the engine's answer: no content coding, so bytes can be relayed and bounded as they are. */
export const LEG_ACCEPT_ENCODING = 'identity';

/** An answer the proxy does not use; its message reads after "prefill instance 3 " or "decode instance 5 ". */
export class UnusableAnswer extends Error {
  readonly code = 'unusable_answer';

  constructor(message: string) {
    super(message);
    this.name = 'UnusableAnswer';
  }
}

/**
 * The error of an answer past the bound.
 * @example answerTooLarge(8 << 20).message // 'answered more than 8388608 bytes (pdlink.proxy.max_answer_bytes)'
 */
export function answerTooLarge(limit: number): UnusableAnswer {
  return new UnusableAnswer(`answered more than ${limit} bytes (pdlink.proxy.max_answer_bytes)`);
}

/**
 * Refuses an answer with a content coding: its body is not read (the connection closes) and the
 * leg fails with UnusableAnswer. fetch on Bun decodes such a body by itself and the socket client
 * does not; refusing both the same way keeps one rule for every client.
 * @throws UnusableAnswer when the answer's `Content-Encoding` is anything but identity.
 * @example refuseEncoded(res); // after the head arrived
 */
export function refuseEncoded(res: LegAnswer): void {
  const encoding = res.headers.get('content-encoding');
  if (encoding === null) return;
  const coding = encoding.trim().toLowerCase();
  if (coding === '' || coding === LEG_ACCEPT_ENCODING) return;
  if (res.hasBody)
    res
      .reader()
      .cancel()
      .catch(() => {});
  throw new UnusableAnswer(
    `answered with Content-Encoding ${JSON.stringify(encoding.slice(0, 40))} though the leg asked for identity ` +
      '(Accept-Encoding: identity): pdlink relays answers as they are; turn compression off between the Coordinator and the engines',
  );
}
