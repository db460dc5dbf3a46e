import { describe, expect, test } from 'bun:test';
import { isConnectionLoss, PooledOrigins } from './send-leg.ts';

describe('isConnectionLoss', () => {
  test('a connection lost under a request, not one never made', () => {
    const withCode = (code: string) => Object.assign(new TypeError('x'), { code });
    expect(isConnectionLoss(withCode('ECONNRESET'))).toBe(true);
    expect(isConnectionLoss(withCode('EPIPE'))).toBe(true);
    expect(isConnectionLoss(withCode('ECONNABORTED'))).toBe(true);
    expect(isConnectionLoss(withCode('ECONNREFUSED'))).toBe(false);
    expect(isConnectionLoss(new DOMException('aborted', 'AbortError'))).toBe(false);
    expect(isConnectionLoss('ECONNRESET')).toBe(false);
    expect(isConnectionLoss(null)).toBe(false);
  });
});

describe('PooledOrigins', () => {
  test('remembers origins that answered, path and scheme aside', () => {
    const origins = new PooledOrigins();
    expect(origins.mayReuse('http://127.0.0.2:8000/v1/completions')).toBe(false);
    origins.answered('http://127.0.0.2:8000/v1/completions');
    expect(origins.mayReuse('http://127.0.0.2:8000/v1/chat/completions')).toBe(true);
    expect(origins.mayReuse('http://127.0.0.2:8001/v1/completions')).toBe(false);
  });

  test('forgets the origin that answered longest ago beyond its capacity', () => {
    const origins = new PooledOrigins(2);
    origins.answered('http://a:1/');
    origins.answered('http://b:1/');
    origins.answered('http://a:1/');
    origins.answered('http://c:1/');
    expect(['a', 'b', 'c'].map((host) => origins.mayReuse(`http://${host}:1/`))).toEqual([true, false, true]);
  });
});
