/**
 * The Coordinator's trust boundary across processes: the management token, the inference API keys
 * (checked with the official `openai` SDK), what reaches the engines, the instance allow-list, the
 * connection cap with the probes still answering, and the per-client rate limit. Every refusal is
 * checked to change nothing, and no secret may show in the process output or in an error body.
 */
import { afterAll, afterEach, describe, expect, test } from 'bun:test';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { connect, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import OpenAI, { AuthenticationError } from 'openai';
import { FakeEngine } from './fixtures/proxy/fake-engine.ts';
import { snapshot } from './fixtures/proxy/harness.ts';
import { decodeResponder, prefillResponder } from './fixtures/proxy/responders.ts';
import { startPdlink, type PdlinkChild } from './support/child.ts';

const TOKEN = 'mgmt-token-7f3a9c1e5b2d4068';
const KEY = 'sk-pdlink-key-one-0c9d8e7f';
const OTHER_KEY = 'sk-pdlink-key-two-11223344';
const dir = mkdtempSync(join(tmpdir(), 'pdlink-auth-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const cleanups: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  await Promise.all(cleanups.splice(0).map((c) => c()));
});

let configs = 0;
async function startCoordinator(pdlink: Record<string, unknown>, env: Record<string, string> = {}): Promise<PdlinkChild> {
  const config = join(dir, `coordinator-${configs++}.json`);
  writeFileSync(config, JSON.stringify({ pdlink }));
  const child = await startPdlink(['coordinator', '--config', config, '--manage_port', '0', '--predict_port', '0'], {
    listeners: ['management', 'inference'],
    env,
  });
  cleanups.push(() => child.kill('SIGTERM'));
  return child;
}

function secretFiles(): { token: string; keys: string } {
  const token = join(dir, 'token');
  const keys = join(dir, 'api-keys');
  writeFileSync(token, `${TOKEN}\n`, { mode: 0o600 });
  writeFileSync(keys, `# inference keys\n${KEY}\n\n${OTHER_KEY}\n`, { mode: 0o600 });
  return { token, keys };
}

const bearer = (secret: string) => ({ authorization: `Bearer ${secret}` });

async function instanceIds(management: string): Promise<number[]> {
  const res = await fetch(`${management}/v1/instances`, { headers: bearer(TOKEN) });
  expect(res.status).toBe(200);
  return ((await res.json()) as { instances: { id: number }[] }).instances.map((i) => i.id).sort();
}

describe('management token', () => {
  test('401 with the envelope without or with a wrong token on every non-probe route, nothing changes; the token passes', async () => {
    const { token } = secretFiles();
    const child = await startCoordinator({ auth: { management_token_file: token } });
    const management = child.urls.management!;
    const p = await FakeEngine.start('127.0.0.2', 'p0', prefillResponder);
    const d = await FakeEngine.start('127.0.0.12', 'd0', decodeResponder);
    cleanups.push(() => Promise.all([p.close(), d.close()]));
    const refresh = JSON.stringify(snapshot([p], [d]));

    for (const headers of [{}, bearer('wrong-token'), bearer(`${TOKEN}x`), { authorization: TOKEN }]) {
      const res = await fetch(`${management}/v1/instances/refresh`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...headers },
        body: refresh,
      });
      expect(res.status).toBe(401);
      expect(res.headers.get('www-authenticate')).toBe('Bearer');
      const body = await res.text();
      expect(JSON.parse(body)).toMatchObject({ error_type: 'Unauthorized' });
      expect(body).not.toContain(TOKEN);
      for (const path of ['/v1/instances', '/metrics', '/dashboard', '/v1/transfers', '/v1/coordinator_info']) {
        expect({ path, status: (await fetch(`${management}${path}`, { headers })).status }).toEqual({ path, status: 401 });
      }
    }
    expect(await instanceIds(management)).toEqual([]);
    for (const probe of ['/v1/health', '/v1/startup', '/v2/health/live']) expect((await fetch(`${management}${probe}`)).status).toBe(200);
    expect((await fetch(`${management}/v1/readiness`)).status).toBe(503);

    const ok = await fetch(`${management}/v1/instances/refresh`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...bearer(TOKEN) },
      body: refresh,
    });
    expect(ok.status).toBe(200);
    expect(await instanceIds(management)).toEqual([10, 20]);
    expect((await fetch(`${management}/metrics`, { headers: bearer(TOKEN) })).status).toBe(200);
    expect(child.output()).not.toContain(TOKEN);
  });

  test('a named token file that is missing or empty stops the start with exit 2 naming the key', async () => {
    const { runPdlink } = await import('./support/child.ts');
    const empty = join(dir, 'empty-token');
    writeFileSync(empty, '\n');
    const config = join(dir, 'missing-token.json');
    writeFileSync(config, JSON.stringify({ pdlink: { auth: { management_token_file: join(dir, 'nope') } } }));
    const missing = await runPdlink(['coordinator', '--config', config, '--manage_port', '0', '--predict_port', '0']);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toContain('pdlink.auth.management_token_file');
    const viaEnv = await runPdlink(['coordinator', '--manage_port', '0', '--predict_port', '0'], {
      env: { PDLINK_MANAGEMENT_TOKEN_FILE: empty },
    });
    expect(viaEnv.code).toBe(2);
    expect(viaEnv.stderr).toContain('PDLINK_MANAGEMENT_TOKEN_FILE');
  });
});

describe('inference API keys', () => {
  test('the openai SDK raises AuthenticationError without or with a wrong key; with a key the request is served and no engine sees it', async () => {
    const { token, keys } = secretFiles();
    const child = await startCoordinator({ auth: { management_token_file: token, api_keys_file: keys } });
    const p = await FakeEngine.start('127.0.0.2', 'p0', prefillResponder);
    const d = await FakeEngine.start('127.0.0.12', 'd0', decodeResponder);
    cleanups.push(() => Promise.all([p.close(), d.close()]));
    const refresh = await fetch(`${child.urls.management}/v1/instances/refresh`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...bearer(TOKEN) },
      body: JSON.stringify(snapshot([p], [d])),
    });
    expect(refresh.status).toBe(200);

    const client = (apiKey: string) => new OpenAI({ apiKey, baseURL: `${child.urls.inference}/v1`, maxRetries: 0 });
    const request = { model: 'test-model', prompt: 'The capital of France is', max_tokens: 8 };
    for (const apiKey of ['wrong-key', TOKEN, `${KEY}x`]) {
      const err = await client(apiKey)
        .completions.create(request)
        .catch((e: unknown) => e);
      expect(err).toBeInstanceOf(AuthenticationError);
      expect((err as AuthenticationError).status).toBe(401);
      expect(String((err as Error).message)).not.toContain(KEY);
    }
    const models = await client('wrong-key')
      .models.list()
      .catch((e: unknown) => e);
    expect(models).toBeInstanceOf(AuthenticationError);
    const chat = await fetch(`${child.urls.inference}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{}',
    });
    expect(chat.status).toBe(401);
    expect(chat.headers.get('www-authenticate')).toBe('Bearer');
    // Nothing reached an engine.
    expect(p.requests.length + d.requests.length).toBe(0);

    const completion = await client(OTHER_KEY).completions.create(request);
    expect(completion.choices.length).toBeGreaterThan(0);
    expect(p.requests.length).toBe(1);
    expect(d.requests.length).toBe(1);
    expect(p.requests[0]!.headers['authorization']).toBeUndefined();
    expect(d.requests[0]!.headers['authorization']).toBeUndefined();
    expect(child.output()).not.toContain(KEY);
    expect(child.output()).not.toContain(OTHER_KEY);
  });

  test('forward_authorization on with API keys: the engines get the client header', async () => {
    const { keys } = secretFiles();
    const child = await startCoordinator({ auth: { api_keys_file: keys }, proxy: { forward_authorization: true } });
    const p = await FakeEngine.start('127.0.0.3', 'p0', prefillResponder);
    const d = await FakeEngine.start('127.0.0.13', 'd0', decodeResponder);
    cleanups.push(() => Promise.all([p.close(), d.close()]));
    const refresh = await fetch(`${child.urls.management}/v1/instances/refresh`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(snapshot([p], [d])),
    });
    expect(refresh.status).toBe(200);
    const res = await fetch(`${child.urls.inference}/v1/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...bearer(KEY) },
      body: JSON.stringify({ model: 'test-model', prompt: 'hi', max_tokens: 4 }),
    });
    expect(res.status).toBe(200);
    expect(p.requests[0]!.headers['authorization']).toBe(`Bearer ${KEY}`);
    expect(d.requests[0]!.headers['authorization']).toBe(`Bearer ${KEY}`);
  });
});

describe('instance allow-list on the Coordinator', () => {
  test('a refresh naming an address outside the list, link-local, or the Coordinator itself is refused with 400 naming the field', async () => {
    const child = await startCoordinator({ allowed_instance_networks: ['127.0.0.0/8'] });
    const management = child.urls.management!;
    const p = await FakeEngine.start('127.0.0.4', 'p0', prefillResponder);
    const d = await FakeEngine.start('127.0.0.14', 'd0', decodeResponder);
    cleanups.push(() => Promise.all([p.close(), d.close()]));
    const good = snapshot([p], [d]) as { ids: number[]; instances: { ip: string; port: string }[] };
    const inferencePort = new URL(child.urls.inference!).port;
    const cases: [string, string | undefined, string][] = [
      ['10.0.0.5', undefined, 'outside pdlink.allowed_instance_networks'],
      ['169.254.169.254', undefined, 'never instances'],
      ['127.0.0.1', inferencePort, 'own listeners'],
    ];
    for (const [ip, port, why] of cases) {
      const body = structuredClone(good);
      body.instances[1]!.ip = ip;
      if (port !== undefined) body.instances[1]!.port = port;
      const res = await fetch(`${management}/v1/instances/refresh`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
      expect(res.status).toBe(400);
      const err = (await res.json()) as { issues: { path: string; message: string }[] };
      expect(err.issues[0]!.path).toBe('instances[1].ip');
      expect(err.issues[0]!.message).toContain(why);
    }
    expect(await instanceIds(management)).toEqual([]);
    const ok = await fetch(`${management}/v1/instances/refresh`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(good),
    });
    expect(ok.status).toBe(200);
  });
});

/** Opens a socket that sends a request head and part of its body, so the request stays in flight. */
function heldRequest(url: string, path: string): Promise<Socket> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve, reject) => {
    const socket = connect({ host: hostname, port: Number(port) }, () => {
      socket.write(`POST ${path} HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: 1000\r\n\r\n{"ids":`);
      resolve(socket);
    });
    socket.on('error', reject);
  });
}

async function poll<T>(probe: () => Promise<T>, done: (value: T) => boolean, what: string): Promise<T> {
  const deadline = Date.now() + 20_000;
  for (;;) {
    const value = await probe();
    if (done(value)) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setImmediate(r));
  }
}

describe('listener caps', () => {
  test('past max_connections busy connections a request gets 503 with Retry-After while the probes answer; it recovers', async () => {
    const child = await startCoordinator({ http: { max_connections: 2 } });
    const management = child.urls.management!;
    const held = [await heldRequest(management, '/v1/instances/refresh'), await heldRequest(management, '/v1/instances/refresh')];
    const refused = await poll(
      () => fetch(`${management}/v1/instances`),
      (r) => r.status === 503,
      'the cap to refuse',
    );
    expect(refused.headers.get('retry-after')).toBe('1');
    expect(((await refused.json()) as { error: string }).error).toContain('more than 2 connections busy');
    // The refresh, which the listener routes itself rather than through its handler, is capped alike.
    const routed = await fetch(`${management}/v1/instances/refresh`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{}',
    });
    expect(routed.status).toBe(503);
    expect(((await routed.json()) as { error: string }).error).toContain('more than 2 connections busy');
    for (const probe of ['/v1/health', '/v1/startup', '/v1/readiness', '/v2/health/live']) {
      expect([200, 503]).toContain((await fetch(`${management}${probe}`)).status);
      expect(await (await fetch(`${management}${probe}`)).text()).not.toContain('connections busy');
    }
    expect((await fetch(`${management}/v1/health`)).status).toBe(200);
    for (const s of held) s.destroy();
    await poll(
      () => fetch(`${management}/v1/instances`),
      (r) => r.status === 200,
      'the cap to let requests in again',
    );
  });

  test('the per-client rate limit answers 429 with Retry-After in OpenAI shape; another key has its own bucket', async () => {
    const { keys } = secretFiles();
    const child = await startCoordinator({ auth: { api_keys_file: keys }, rate_limit: { requests_per_second: 0.01, burst: 2 } });
    const send = (key: string) =>
      fetch(`${child.urls.inference}/v1/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...bearer(key) },
        body: JSON.stringify({ model: 'test-model', prompt: 'hi', max_tokens: 4 }),
      });
    // No instances are registered: the first two are served (and refused by the proxy as not ready), not rate-limited.
    for (let i = 0; i < 2; i++) expect((await send(KEY)).status).not.toBe(429);
    const limited = await send(KEY);
    expect(limited.status).toBe(429);
    expect(Number(limited.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    expect(((await limited.json()) as { error: { type: string } }).error.type).toBe('rate_limit_error');
    expect((await send(OTHER_KEY)).status).not.toBe(429);
    const sdk = await new OpenAI({ apiKey: KEY, baseURL: `${child.urls.inference}/v1`, maxRetries: 0 }).completions
      .create({ model: 'test-model', prompt: 'hi', max_tokens: 4 })
      .catch((e: unknown) => e);
    expect((sdk as { status?: number }).status).toBe(429);
  });
});
