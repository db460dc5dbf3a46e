/**
 * Writes a simulated engine's generated answer: whole (one JSON body after all tokens) or streamed
 * (one SSE event per token, `decodeMsPerToken` apart), with the digest of every byte sent kept in
 * the request record, an abort honoured between tokens, and the crash fault (the process dies
 * after K tokens, as an engine that falls over mid-stream).
 */
import { createHash } from 'node:crypto';
import { KV_BLOCKS_HEADER, KV_BYTES_HEADER } from '../../../core/kv-report.ts';
import { answerHead, roleChunk, SSE_DONE, sseEvent, sseText, tokenChunk, usage, usageChunk, wholeAnswer } from '../http/openai.ts';
import { finish, type RequestRecord } from '../request-log.ts';
import type { SimRequest } from './request.ts';
import { generatedToken, type PromptHash } from '../model/tokens.ts';

export interface AnswerPlan {
  readonly request: SimRequest;
  readonly requestId: string;
  readonly hash: PromptHash;
  readonly decodeMsPerToken: number;
  /** Time to the next token now (the batch-size model of timing.ts); default `decodeMsPerToken`. */
  readonly tokenMs?: () => number;
  readonly record: RequestRecord;
  readonly signal: AbortSignal;
  /** Die after sending this many tokens (0 = before the first byte); undefined = never. */
  readonly crashAfter: number | undefined;
  readonly crash: () => void;
  /** Runs once when the answer is over, however it ended (frees the request's blocks). */
  readonly onEnd: () => void;
}

/**
 * Sleeps `ms` unless `signal` aborts first; resolves true when the time passed.
 * @example if (!(await pause(5, signal))) return;
 */
export function pause(ms: number, signal: AbortSignal): Promise<boolean> {
  if (signal.aborted) return Promise.resolve(false);
  if (ms <= 0) return Promise.resolve(true);
  return new Promise((resolve) => {
    const onAbort = (): void => {
      clearTimeout(timer);
      resolve(false);
    };
    const timer = setTimeout(() => {
      signal.removeEventListener('abort', onAbort);
      resolve(true);
    }, ms);
    signal.addEventListener('abort', onAbort, { once: true });
  });
}

/**
 * The response of a generating leg (decode, or a request served alone).
 * @example return answer({ request, requestId, hash, decodeMsPerToken: 0, record, signal, crashAfter: undefined, crash, onEnd });
 */
export async function answer(plan: AnswerPlan): Promise<Response> {
  return plan.request.stream ? streamed(plan) : await whole(plan);
}

function headers(plan: AnswerPlan, contentType: string): Headers {
  const out = new Headers({ 'content-type': contentType, 'x-request-id': plan.requestId });
  // A decode leg has pulled its KV blocks before answering: it tells the proxy what it moved, which
  // is how the Coordinator's ledger learns the bytes of a transfer it never sees.
  if (plan.record.leg === 'decode') {
    out.set(KV_BYTES_HEADER, String(plan.record.bytesPulled));
    out.set(KV_BLOCKS_HEADER, String(plan.record.blocks));
  }
  return out;
}

async function whole(plan: AnswerPlan): Promise<Response> {
  const { request, record } = plan;
  try {
    if (plan.crashAfter !== undefined) await crashSoon(plan);
    if (!(await pause(request.maxTokens * (plan.tokenMs?.() ?? plan.decodeMsPerToken), plan.signal))) {
      finish(record, 'aborted', 499);
      return new Response(null, { status: 499 });
    }
    let text = '';
    for (let i = 0; i < request.maxTokens; i++) text += generatedToken(plan.hash, i);
    const head = answerHead(request.kind, plan.requestId, request.model);
    const bytes = new TextEncoder().encode(
      JSON.stringify(wholeAnswer(head, text, 'length', usage(request.tokens.length, request.maxTokens))),
    );
    record.completionTokens = request.maxTokens;
    record.bytesSent = bytes.byteLength;
    record.digest = createHash('sha256').update(bytes).digest('hex');
    finish(record, 'ok', 200);
    return new Response(bytes, { status: 200, headers: headers(plan, 'application/json') });
  } finally {
    plan.onEnd();
  }
}

function streamed(plan: AnswerPlan): Response {
  const { request, record } = plan;
  const head = answerHead(request.kind, plan.requestId, request.model);
  // An engine with no time per token has every token at once and sends them in one write, as an
  // engine does when several tokens are ready at an iteration; paced streams go token by token.
  if (plan.decodeMsPerToken <= 0 && plan.crashAfter === undefined) return streamedAtOnce(plan, head);
  const hasher = createHash('sha256');
  let sent = 0;
  let ended = false;
  const end = (outcome: 'ok' | 'aborted', status: number): void => {
    if (ended) return;
    ended = true;
    if (outcome === 'ok') record.digest = hasher.digest('hex');
    finish(record, outcome, status);
    plan.onEnd();
  };
  const emit = (controller: ReadableStreamDefaultController<Uint8Array>, bytes: Uint8Array): void => {
    hasher.update(bytes);
    record.bytesSent += bytes.byteLength;
    controller.enqueue(bytes);
  };
  const stream = new ReadableStream<Uint8Array>(
    {
      async start(controller) {
        if (plan.crashAfter === 0) await crashSoon(plan);
        if (request.kind === 'chat') emit(controller, sseEvent(roleChunk(head)));
      },
      async pull(controller) {
        if (ended) return;
        if (plan.crashAfter !== undefined && plan.crashAfter > 0 && sent === plan.crashAfter) await crashSoon(plan);
        if (sent > 0 && !(await pause(plan.tokenMs?.() ?? plan.decodeMsPerToken, plan.signal))) {
          end('aborted', 499);
          controller.close();
          return;
        }
        if (plan.signal.aborted) {
          end('aborted', 499);
          controller.close();
          return;
        }
        const last = sent === request.maxTokens - 1;
        emit(controller, sseEvent(tokenChunk(head, generatedToken(plan.hash, sent), last ? 'length' : null)));
        sent++;
        record.completionTokens = sent;
        if (!last) return;
        if (request.includeUsage) emit(controller, sseEvent(usageChunk(head, usage(request.tokens.length, sent))));
        emit(controller, SSE_DONE);
        end('ok', 200);
        controller.close();
      },
      cancel() {
        end('aborted', 499);
      },
    },
    // No read-ahead: a token is produced when the previous one has been taken, as an engine paces its stream.
    { highWaterMark: 0 },
  );
  return new Response(stream, { status: 200, headers: headers(plan, 'text/event-stream') });
}

function streamedAtOnce(plan: AnswerPlan, head: ReturnType<typeof answerHead>): Response {
  const { request, record } = plan;
  try {
    // One string, encoded once: the events are the same bytes sseEvent writes one by one.
    let text = request.kind === 'chat' ? sseText(roleChunk(head)) : '';
    for (let i = 0; i < request.maxTokens; i++) {
      text += sseText(tokenChunk(head, generatedToken(plan.hash, i), i === request.maxTokens - 1 ? 'length' : null));
    }
    if (request.includeUsage) text += sseText(usageChunk(head, usage(request.tokens.length, request.maxTokens)));
    text += 'data: [DONE]\n\n';
    const bytes = Buffer.from(text, 'utf8');
    record.completionTokens = request.maxTokens;
    record.bytesSent = bytes.byteLength;
    record.digest = createHash('sha256').update(bytes).digest('hex');
    finish(record, 'ok', 200);
    return new Response(bytes, { status: 200, headers: headers(plan, 'text/event-stream') });
  } finally {
    plan.onEnd();
  }
}

/**
 * The crash fault: gives the bytes already queued a moment to reach the socket (so "after K
 * tokens" really means the caller saw K tokens), then kills the process the way a fault would.
 */
async function crashSoon(plan: AnswerPlan): Promise<never> {
  await new Promise((resolve) => setTimeout(resolve, 50));
  plan.crash();
  // An in-process engine's crash hook returns: the answer must still break, not go on as if all were well.
  throw new Error('simulated engine crash');
}
