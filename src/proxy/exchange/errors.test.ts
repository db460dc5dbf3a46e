import { describe, expect, test } from 'bun:test';
import { errors } from '../../core/errors.ts';
import { errorResponse, openAiErrorBody, sseErrorEvent } from './errors.ts';

describe('OpenAI-style errors', () => {
  test('type follows the status; code is pdlink’s; param names the first field', () => {
    expect(openAiErrorBody(errors.tooManyRequests(3))).toEqual({
      error: { message: 'more than 3 requests in flight', type: 'rate_limit_error', code: 'too_many_requests', param: null },
    });
    expect(openAiErrorBody(errors.timeout('late')).error.type).toBe('server_error');
    const invalid = openAiErrorBody(errors.invalidBody([{ path: 'prompt', message: 'is required' }]));
    expect(invalid.error).toMatchObject({
      type: 'invalid_request_error',
      code: 'invalid_body',
      param: 'prompt',
      issues: [{ path: 'prompt', message: 'is required' }],
    });
  });

  test('responses carry the status, JSON and the request id', async () => {
    const res = errorResponse(errors.unavailable('no pair'), 'r9');
    expect(res.status).toBe(503);
    expect(res.headers.get('content-type')).toBe('application/json');
    expect(res.headers.get('x-request-id')).toBe('r9');
    expect(((await res.json()) as { error: { message: string } }).error.message).toBe('no pair');
  });

  test('the SSE event is one data line and a blank line', () => {
    const text = new TextDecoder().decode(sseErrorEvent(errors.upstreamFailed('gone')));
    expect(text).toBe('data: {"error":{"message":"gone","type":"server_error","code":"upstream_failed","param":null}}\n\n');
  });
});
