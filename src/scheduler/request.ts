/**
 * Checks a pick request once at the scheduler's edge, and works out how many KV blocks it needs on
 * a given instance (instances may differ in block size).
 */
import type { Instance } from '../cluster/instance.ts';
import { errors } from '../core/errors.ts';
import type { PickRequest } from './types.ts';

const NO_IDS: ReadonlySet<number> = new Set();

/** A checked request with its exclusions defaulted. */
export interface CheckedRequest extends PickRequest {
  readonly excludeP: ReadonlySet<number>;
  readonly excludeD: ReadonlySet<number>;
}

/**
 * Validates the shape of a pick request; token ids themselves are checked when they are hashed.
 * @throws PdlinkError `bad_request` naming the field.
 * @example const checked = checkPickRequest({ promptBlocks: 4 });
 */
export function checkPickRequest(request: PickRequest): CheckedRequest {
  if (typeof request !== 'object' || request === null) throw errors.invalidArgument('request', 'must be an object');
  const { promptTokens, promptText, promptBlocks, excludeP, excludeD } = request;
  if (promptTokens !== undefined && !Array.isArray(promptTokens))
    throw errors.invalidArgument('promptTokens', 'must be an array of token ids');
  if (promptText !== undefined && typeof promptText !== 'string') throw errors.invalidArgument('promptText', 'must be a string');
  const count = request.promptTokenCount;
  if (count !== undefined && (!Number.isSafeInteger(count) || count < 0))
    throw errors.invalidArgument('promptTokenCount', 'must be a non-negative integer');
  if (promptBlocks !== undefined && (!Number.isSafeInteger(promptBlocks) || promptBlocks < 0)) {
    throw errors.invalidArgument('promptBlocks', 'must be a non-negative integer');
  }
  if (excludeP !== undefined && !isIdSet(excludeP)) throw errors.invalidArgument('excludeP', 'must be a Set of instance ids');
  if (excludeD !== undefined && !isIdSet(excludeD)) throw errors.invalidArgument('excludeD', 'must be a Set of instance ids');
  // A request with both sets (the proxy's, every time) is already what a checked one looks like.
  if (excludeP !== undefined && excludeD !== undefined) return request as CheckedRequest;
  return { ...request, excludeP: excludeP ?? NO_IDS, excludeD: excludeD ?? NO_IDS };
}

/**
 * KV blocks the prompt needs on an instance: `promptBlocks` when given, else ⌈tokens / block_size⌉, else 0.
 * @example blocksNeeded({ promptTokens: new Array(300).fill(1) }, instance) // 3 with block_size 128
 */
export function blocksNeeded(request: PickRequest, instance: Instance): number {
  if (request.promptBlocks !== undefined) return request.promptBlocks;
  if (request.promptTokens !== undefined) return Math.ceil(request.promptTokens.length / instance.blockSize);
  return 0;
}

function isIdSet(value: unknown): value is ReadonlySet<number> {
  return value instanceof Set;
}
