import { describe, expect, test } from 'bun:test';
import { SimEngine } from './engine.ts';
import { simInferenceApp } from './http/inference-app.ts';
import { MemoryFabric } from './kv/kv-port.ts';
import { RoleSwitch } from './role-switch.ts';

const DEVICE = { endpoint: '0', clusterId: 1001n };

function engine(role: 'prefill' | 'decode' = 'prefill', decodeMsPerToken = 0): SimEngine {
  return new SimEngine({
    model: 'sim',
    role,
    devices: [DEVICE],
    kv: new MemoryFabric().kv([DEVICE]),
    numBlocks: 64,
    blockBytes: 256,
    blockTokens: 4,
    prefillMsPerToken: 0,
    decodeMsPerToken,
    maxModelLen: 512,
    kvLeaseMs: 60_000,
    pullTimeoutMs: 1000,
  });
}

/** A switch whose wait ends when the test says so. */
function heldSwitch(): { roleSwitch: RoleSwitch; release: () => void; waited: number[] } {
  const waited: number[] = [];
  let release = (): void => {};
  const roleSwitch = new RoleSwitch(5000, (ms) => {
    waited.push(ms);
    return new Promise<void>((resolve) => (release = resolve));
  });
  return { roleSwitch, release: () => release(), waited };
}

const prefillBody = { model: 'sim', prompt: 'a prompt of a few blocks', max_tokens: 1, kv_transfer_params: { do_remote_decode: true } };
const post = (app: ReturnType<typeof simInferenceApp>, body: unknown) =>
  app.request('/v1/completions', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });

describe('a simulated role switch', () => {
  test('drops the KV cache, refuses requests with 503 and fails its health check until the switch time is over', async () => {
    const sim = engine();
    await sim.start();
    const { roleSwitch, release, waited } = heldSwitch();
    (sim as { roleSwitch: RoleSwitch }).roleSwitch = roleSwitch;
    const app = simInferenceApp(sim);
    expect((await post(app, prefillBody)).status).toBe(200);
    expect(sim.resources().availBlockNum).toBeLessThan(sim.resources().totalBlockNum);
    expect(sim.prefixCache.stats().blocks).toBeGreaterThan(0);

    const switching = sim.switchRole('decode');
    expect(waited).toEqual([5000]);
    expect(sim.resources().availBlockNum).toBe(sim.resources().totalBlockNum);
    expect(sim.prefixCache.stats().blocks).toBe(0);
    const refused = await post(app, prefillBody);
    expect(refused.status).toBe(503);
    expect(((await refused.json()) as { error: { message: string; type: string } }).error).toMatchObject({
      message: 'the engine is switching its role to decode and serves nothing until it is done',
      type: 'ServiceUnavailableError',
    });
    expect((await app.request('/health')).status).toBe(503);
    expect(sim.stats()).toMatchObject({ role: 'prefill', switching_to: 'decode', role_switches: 0 });

    release();
    await switching;
    expect(sim.stats()).toMatchObject({ role: 'decode', switching_to: null, role_switches: 1 });
    expect((await app.request('/health')).status).toBe(200);
    expect((await post(app, prefillBody)).status).toBe(200);
  });

  test('the role it already has costs nothing: the first role post names the role it was started with', async () => {
    const sim = engine('decode');
    const { roleSwitch, waited } = heldSwitch();
    (sim as { roleSwitch: RoleSwitch }).roleSwitch = roleSwitch;
    await sim.switchRole('decode');
    expect(waited).toEqual([]);
    expect(sim.stats().role_switches).toBe(0);
  });

  test('a stall_role_switch fault makes the next switch last longer', async () => {
    const sim = engine();
    const { roleSwitch, release, waited } = heldSwitch();
    (sim as { roleSwitch: RoleSwitch }).roleSwitch = roleSwitch;
    sim.faults.arm({ stall_role_switch: { ms: 700, count: 1 } });
    expect(sim.faults.toJSON()['stall_role_switch']).toEqual({ ms: 700, count: 1 });
    const switching = sim.switchRole('decode');
    release();
    await switching;
    const back = sim.switchRole('prefill');
    release();
    await back;
    expect(waited).toEqual([5700, 5000]);
  });

  test('ends the legs running when it drops the KV cache: a stream in flight is cut, recorded aborted', async () => {
    const sim = engine('decode', 20);
    await sim.start();
    const res = await post(simInferenceApp(sim), { model: 'sim', prompt: 'a sequence the switch drops', max_tokens: 200, stream: true });
    expect(res.status).toBe(200);
    const reader = res.body!.getReader();
    await reader.read();
    await sim.switchRole('prefill');
    let text = '';
    for (let chunk = await reader.read(); !chunk.done; chunk = await reader.read()) text += new TextDecoder().decode(chunk.value);
    expect(text).not.toContain('[DONE]');
    expect(sim.log.list()[0]).toMatchObject({ leg: 'local', outcome: 'aborted' });
  });

  test('a switch time of 0 still drops the cache', async () => {
    const sim = engine();
    await sim.start();
    expect((await post(simInferenceApp(sim), prefillBody)).status).toBe(200);
    await sim.switchRole('decode');
    expect(sim.resources().availBlockNum).toBe(sim.resources().totalBlockNum);
    expect(sim.role).toBe('decode');
  });
});
