/**
 * How an exchange answers early: whatever ended it (a refused reservation, a rejected prefill, a
 * timeout) settles the exchange first, then throws a Stop carrying the client's response up to
 * `Exchange.run`, which returns it as is.
 */

/** Thrown inside an exchange to answer with `response`; the exchange has already ended. */
export class Stop {
  constructor(readonly response: Response) {}
}
