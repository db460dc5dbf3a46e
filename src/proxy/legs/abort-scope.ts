/**
 * The abort of one proxied request, without an EventTarget. A request's legs each hold an
 * AbortController of their own (fetch needs one, and the engine's silence aborts a leg alone); they
 * used to hear of the request's abort through an `abort` listener on its AbortSignal, and adding,
 * then removing, a listener per leg plus the request's own controller were together the largest
 * share of the proxy's bookkeeping in a CPU profile. A scope is a flag, a reason and a short list
 * of callbacks; a real AbortSignal is made only for a caller that needs one.
 */
export class AbortScope {
  #aborted = false;
  #reason: unknown = undefined;
  #listeners: (() => void)[] = [];
  #signal: AbortSignal | undefined;

  /** True once abort() ran. */
  get aborted(): boolean {
    return this.#aborted;
  }

  /** What abort() was given. */
  get reason(): unknown {
    return this.#reason;
  }

  /**
   * An AbortSignal that aborts with this scope, made on first use (for APIs that take a signal).
   * @example await abortableDelay(ms, scope.signal);
   */
  get signal(): AbortSignal {
    if (this.#signal !== undefined) return this.#signal;
    if (this.#aborted) return (this.#signal = AbortSignal.abort(this.#reason));
    const controller = new AbortController();
    this.#signal = controller.signal;
    this.add(() => controller.abort(this.#reason));
    return this.#signal;
  }

  /**
   * Aborts the scope once: the first reason sticks and every callback runs once, in the order added.
   * @example scope.abort('client_abort');
   */
  abort(reason: unknown): void {
    if (this.#aborted) return;
    this.#aborted = true;
    this.#reason = reason;
    const listeners = this.#listeners;
    this.#listeners = [];
    for (const listener of listeners) listener();
  }

  /**
   * Calls `listener` when the scope aborts (never if it already has: check `aborted` first).
   * @example if (scope.aborted) stop(); else scope.add(stop);
   */
  add(listener: () => void): void {
    if (!this.#aborted) this.#listeners.push(listener);
  }

  /**
   * Forgets `listener`; a leg that ended no longer cares about the request's abort.
   * @example scope.remove(stop);
   */
  remove(listener: () => void): void {
    const at = this.#listeners.indexOf(listener);
    if (at !== -1) this.#listeners.splice(at, 1);
  }
}

/** What a leg may be aborted by: the request's scope, or any AbortSignal. */
export type AbortParent = AbortScope | AbortSignal;

/**
 * Calls `listener` once when `parent` aborts (never if it already has: check `aborted` first).
 * @example if (parent.aborted) stop(); else onAbort(parent, stop);
 */
export function onAbort(parent: AbortParent, listener: () => void): void {
  if (parent instanceof AbortScope) parent.add(listener);
  else parent.addEventListener('abort', listener, { once: true });
}

/**
 * Forgets a listener given to onAbort.
 * @example offAbort(parent, stop);
 */
export function offAbort(parent: AbortParent, listener: () => void): void {
  if (parent instanceof AbortScope) parent.remove(listener);
  else parent.removeEventListener('abort', listener);
}
