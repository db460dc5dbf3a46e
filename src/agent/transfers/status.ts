/**
 * How the transfer API answers as data: a runtime code with its name and, when an argument was
 * refused before the runtime was asked, which field and why. Both the cache calls and the transfers
 * answer this way, so the shape is built in one place.
 */
import { statusName } from '../../core/llm-status.ts';
import type { ArgumentRefused } from './args.ts';
import type { CallStatus } from './types.ts';

/** A runtime code as data, with a message when there is more to say. */
export const status = (ret: number, message?: string): CallStatus => ({
  ret,
  retName: statusName(ret),
  ...(message === undefined ? {} : { message }),
});

/** The answer to a refused argument, naming it for callers that report fields (the HTTP routes). */
export const refusal = (r: ArgumentRefused): CallStatus => ({
  ...status(r.code, r.message),
  refused: { field: r.field, reason: r.reason },
});
