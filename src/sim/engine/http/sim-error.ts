/**
 * Errors of the simulated engine, answered the way vLLM's OpenAI server answers them:
 * `{"error": {"message", "type", "param", "code"}}` with the HTTP status as `code`.
 */
import type { FieldIssue } from '../../../core/errors.ts';
import { describeIssues } from '../../../core/errors.ts';

export class SimError extends Error {
  readonly status: number;
  readonly type: string;
  readonly param: string | null;

  constructor(status: number, message: string, type: string, param: string | null = null) {
    super(message);
    this.name = 'SimError';
    this.status = status;
    this.type = type;
    this.param = param;
  }

  /**
   * A 400 about one field (or the whole body when `param` is null).
   * @example throw SimError.badRequest('prompt: must not be empty', 'prompt');
   */
  static badRequest(message: string, param: string | null): SimError {
    return new SimError(400, message, 'BadRequestError', param);
  }

  /**
   * A 400 naming every offending field.
   * @example throw SimError.invalid([{ path: 'max_tokens', message: 'must be ≥ 1' }]);
   */
  static invalid(issues: readonly FieldIssue[]): SimError {
    return new SimError(400, `invalid request: ${describeIssues(issues)}`, 'BadRequestError', issues[0]?.path || null);
  }

  /**
   * A 5xx of the engine itself.
   * @example throw SimError.server(500, 'KV verification failed');
   */
  static server(status: number, message: string): SimError {
    return new SimError(status, message, status === 503 ? 'ServiceUnavailableError' : 'InternalServerError');
  }

  /** The JSON body. */
  body(): { error: { message: string; type: string; param: string | null; code: number } } {
    return { error: { message: this.message, type: this.type, param: this.param, code: this.status } };
  }

  /**
   * The HTTP response, carrying the request id when there is one.
   * @example return err.toResponse(requestId);
   */
  toResponse(requestId?: string): Response {
    const headers = new Headers({ 'content-type': 'application/json' });
    if (requestId !== undefined) headers.set('x-request-id', requestId);
    return new Response(JSON.stringify(this.body()), { status: this.status, headers });
  }
}
