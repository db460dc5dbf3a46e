import { describe, expect, test } from 'bun:test';
import { fetchCapWarning, MAX_QUOTED_CHARS, quoteError, transportMessage } from './upstream.ts';

describe('quoteError', () => {
  test('takes the message out of the usual error shapes', () => {
    expect(quoteError('{"error":{"message":"boom"}}')).toBe('boom');
    expect(quoteError('{"error":"overloaded"}')).toBe('overloaded');
    expect(quoteError('{"object":"error","message":"too long"}')).toBe('too long');
    expect(quoteError(' plain text \n')).toBe('plain text');
  });

  test('shortens long bodies', () => {
    expect(quoteError('x'.repeat(1000))).toHaveLength(MAX_QUOTED_CHARS + 1);
  });
});

test('transportMessage adds the error code once', () => {
  expect(transportMessage(Object.assign(new Error('refused'), { code: 'ECONNREFUSED' }))).toBe('ECONNREFUSED: refused');
  expect(transportMessage(Object.assign(new Error('ECONNRESET: closed'), { code: 'ECONNRESET' }))).toBe('ECONNRESET: closed');
  expect(transportMessage('odd')).toBe('odd');
});

test('fetchCapWarning speaks up only when Bun would queue admitted requests', () => {
  expect(fetchCapWarning(256, {})).toBeUndefined();
  expect(fetchCapWarning(10_000, {})).toContain('BUN_CONFIG_MAX_HTTP_REQUESTS=10000');
  expect(fetchCapWarning(10_000, { BUN_CONFIG_MAX_HTTP_REQUESTS: '20000' })).toBeUndefined();
  expect(fetchCapWarning(90_000, { BUN_CONFIG_MAX_HTTP_REQUESTS: 'junk' })).toContain('=65535');
});
