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

describe('PooledOrigins: origins as URL gives them', () => {
  test('the same origin however the URL spells it, and past the remembered URLs too', () => {
    const origins = new PooledOrigins(2);
    origins.answered('http://Engine-A:80/v1/completions');
    expect(origins.mayReuse('http://engine-a/v1/chat/completions')).toBe(true);
    // More distinct URLs than the origin cache keeps: answers stay right after it starts over.
    for (let i = 0; i < 20; i++) origins.answered(`http://engine-a/v1/path-${i}`);
    expect(origins.mayReuse('http://engine-a:80/again')).toBe(true);
    expect(origins.mayReuse('https://engine-a/again')).toBe(false);
  });
});
