/**
 * The in-flight bound of the inference listener (`request_limit.max_requests`): a request holds a
 * place from admission until its response has ended, streamed or not.
 */
export class InFlightLimit {
  readonly #max: number;
  #count = 0;

  /**
   * @example const limit = new InFlightLimit(settings.maxInFlight);
   */
  constructor(max: number) {
    this.#max = max;
  }

  get count(): number {
    return this.#count;
  }

  /**
   * Takes a place; false when all are taken.
   * @example if (!limit.tryAcquire()) return tooMany();
   */
  tryAcquire(): boolean {
    if (this.#count >= this.#max) return false;
    this.#count++;
    return true;
  }

  /**
   * Gives a place back; call exactly once per successful tryAcquire.
   * @example limit.release();
   */
  release(): void {
    if (this.#count > 0) this.#count--;
  }
}
