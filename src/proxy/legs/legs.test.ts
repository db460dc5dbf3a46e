import { describe, expect, test } from 'bun:test';
import { PdlinkError } from '../../core/errors.ts';
import { UnsafeInteger } from '../../core/exact-json.ts';
import { decodeBody, engineUrl, legHeaders, legText, PREFILL_KV_REQUEST, prefillBody, viaHasHop, viaHeader } from './legs.ts';

describe('prefillBody', () => {
  test('one token, not streamed, no stream options or minimum lengths, KV kept for a remote decoder', () => {
    const body = {
      model: 'm',
      prompt: 'p',
      stream: true,
      stream_options: { include_usage: true },
      max_tokens: 99,
      max_completion_tokens: 99,
      min_tokens: 5,
      min_completion_tokens: 5,
      top_p: 0.9,
    };
    expect(prefillBody(body)).toEqual({
      model: 'm',
      prompt: 'p',
      stream: false,
      max_tokens: 1,
      max_completion_tokens: 1,
      top_p: 0.9,
      kv_transfer_params: { ...PREFILL_KV_REQUEST },
    });
  });

  test('does not add max_completion_tokens when the client did not send it, and leaves the client body alone', () => {
    const body = { model: 'm', prompt: 'p', kv_transfer_params: { client: true } };
    const leg = prefillBody(body);
    expect('max_completion_tokens' in leg).toBe(false);
    expect(leg['kv_transfer_params']).toEqual({ ...PREFILL_KV_REQUEST });
    expect(body).toEqual({ model: 'm', prompt: 'p', kv_transfer_params: { client: true } });
  });
});

describe('legText', () => {
  test('writes the body as JSON, integers beyond 2^53−1 with their own digits', () => {
    expect(legText({ model: 'm', seed: new UnsafeInteger('18446744073709551615') })).toBe('{"model":"m","seed":18446744073709551615}');
  });

  test('a body JSON cannot write is the client’s error (400), naming why', () => {
    let thrown: unknown;
    try {
      legText({ model: 'm', extra: 1n });
    } catch (err) {
      thrown = err;
    }
    expect(thrown).toBeInstanceOf(PdlinkError);
    expect((thrown as PdlinkError).status).toBe(400);
    expect((thrown as PdlinkError).message).toStartWith('request body cannot be forwarded as JSON: ');
  });
});

describe('decodeBody', () => {
  test('the original body plus P’s parameters, the very same object', () => {
    const params = { remote_block_ids: [1], remote_engine_id: 'e' };
    const body = { model: 'm', prompt: 'p', min_tokens: 3, stream: true };
    const leg = decodeBody(body, params);
    expect(leg).toEqual({ ...body, kv_transfer_params: params });
    expect(leg['kv_transfer_params']).toBe(params);
  });

  test('without parameters from P, the body as the client sent it', () => {
    expect(decodeBody({ model: 'm', prompt: 'p' }, undefined)).toEqual({ model: 'm', prompt: 'p' });
  });
});

describe('legHeaders and engineUrl', () => {
  test('JSON, no content coding, the request id, and the client’s credentials only', () => {
    const headers = legHeaders({ authorization: 'Bearer k', traceparent: '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01' }, 'r1');
    expect(headers).toEqual({
      authorization: 'Bearer k',
      'content-type': 'application/json',
      'accept-encoding': 'identity',
      'x-request-id': 'r1',
    });
  });

  test("Via: the proxy appends its hop to the client's, and recognises its own hop coming back", () => {
    expect(viaHeader(undefined, 'pdlink-ab12')).toBe('1.1 pdlink-ab12');
    expect(viaHeader('1.1 gateway', 'pdlink-ab12')).toBe('1.1 gateway, 1.1 pdlink-ab12');
    expect(viaHasHop('1.1 gateway, 1.1 pdlink-ab12', 'pdlink-ab12')).toBe(true);
    expect(viaHasHop('1.1 pdlink-ab123', 'pdlink-ab12')).toBe(false);
    expect(viaHasHop(undefined, 'pdlink-ab12')).toBe(false);
    const headers = legHeaders({ via: '1.1 pdlink-ab12' }, 'r1');
    expect(headers['via']).toBe('1.1 pdlink-ab12');
  });

  test('an address changed in place is spelled anew; each kind and scheme has its own URL', () => {
    const instance = { ip: '10.0.0.5', port: 1025 };
    expect(engineUrl(instance, 'chat')).toBe('http://10.0.0.5:1025/v1/chat/completions');
    expect(engineUrl(instance, 'completions', true)).toBe('https://10.0.0.5:1025/v1/completions');
    expect(engineUrl(instance, 'chat')).toBe(engineUrl(instance, 'chat'));
    instance.port = 2000;
    expect(engineUrl(instance, 'chat')).toBe('http://10.0.0.5:2000/v1/chat/completions');
    instance.ip = '::1';
    expect(engineUrl(instance, 'completions')).toBe('http://[::1]:2000/v1/completions');
  });

  test('IPv4 as is, IPv6 in brackets, the API path per kind', () => {
    expect(engineUrl({ ip: '10.0.0.5', port: 1025 }, 'completions')).toBe('http://10.0.0.5:1025/v1/completions');
    expect(engineUrl({ ip: 'fe80::1', port: 8000 }, 'chat')).toBe('http://[fe80::1]:8000/v1/chat/completions');
  });
});
