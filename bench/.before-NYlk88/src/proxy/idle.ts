/**
 * `http_timeout_seconds`, as MindIE's Coordinator applies its HTTP timeout to each read on an
 * engine connection: a leg fails when the engine sends nothing for that long — no response head
 * after the request went out, or no next body chunk. It bounds a stalled engine, not a long
 * stream that keeps producing; but an engine that answers a non-streamed request only once it is
 * complete is silent until then, so for those the timeout also bounds the generation.
 *
 * The failure is a transport error (code ETIMEDOUT): the instance is reported, a P leg is retried
 * on another P, a D leg fails (D may already hold the KV blocks).
 */

/** Code of the error a silent engine's leg fails with. */
export const ENGINE_IDLE_CODE = 'ETIMEDOUT';

/**
 * The error of a leg whose engine stayed silent for `idleMs`.
 * @example engineIdleError(600_000).message
 */
export function engineIdleError(idleMs: number): Error {
  const seconds = idleMs / 1000;
  return Object.assign(new Error(`the engine sent nothing for ${seconds} s (http_timeout_seconds)`), { code: ENGINE_IDLE_CODE });
}

/**
 * Sends a request with `send` under an idle timeout: the returned response's body is read through
 * a stream that fails with engineIdleError once `idleMs` pass without a chunk. `signal` still
 * aborts everything. With `idleMs` Infinity, `send` runs as it is.
 * @example const res = await withIdleTimeout((s) => fetch(url, { signal: s }), signal, 600_000);
 */
export async function withIdleTimeout(
  send: (signal: AbortSignal) => Promise<Response>,
  signal: AbortSignal,
  idleMs: number,
): Promise<Response> {
  if (!Number.isFinite(idleMs)) return send(signal);
  const controller = new AbortController();
  let idle: Error | undefined;
  let timer: ReturnType<typeof setTimeout> | undefined;
  const onAbort = (): void => {
    // The caller's abort ends the leg; the engine's silence no longer matters.
    if (timer !== undefined) clearTimeout(timer);
    timer = undefined;
    controller.abort(signal.reason);
  };
  const stop = (): void => {
    if (timer !== undefined) clearTimeout(timer);
    timer = undefined;
    signal.removeEventListener('abort', onAbort);
  };
  const arm = (onIdle: (err: Error) => void): void => {
    if (timer !== undefined) clearTimeout(timer);
    if (controller.signal.aborted) return;
    timer = setTimeout(() => {
      idle = engineIdleError(idleMs);
      onIdle(idle);
    }, idleMs);
  };
  arm((err) => controller.abort(err));
  if (signal.aborted) onAbort();
  else signal.addEventListener('abort', onAbort, { once: true });
  let res: Response;
  try {
    res = await send(controller.signal);
  } catch (err) {
    stop();
    throw idle ?? err;
  }
  const body = res.body;
  if (body === null) {
    stop();
    return res;
  }
  const reader = body.getReader();
  const stream = new ReadableStream<Uint8Array>({
    start(streamController) {
      arm((err) => {
        streamController.error(err);
        controller.abort(err);
        void reader.cancel(err).catch(() => {});
      });
    },
    async pull(streamController) {
      try {
        const { done, value } = await reader.read();
        if (idle !== undefined) return;
        if (done) {
          stop();
          streamController.close();
          return;
        }
        arm((err) => {
          streamController.error(err);
          controller.abort(err);
          void reader.cancel(err).catch(() => {});
        });
        streamController.enqueue(value);
      } catch (err) {
        stop();
        if (idle === undefined) streamController.error(err);
      }
    },
    cancel(reason) {
      stop();
      return reader.cancel(reason);
    },
  });
  return new Response(stream, { status: res.status, statusText: res.statusText, headers: res.headers });
}
