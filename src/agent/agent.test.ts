import { expect, test } from 'bun:test';
import { createRegistry } from '../core/metrics.ts';
import { LLM_STATUS as S } from '../core/llm-status.ts';
import { openAgent } from './agent.ts';

const workerFilename = new URL('../../test/fixtures/links/sim-worker.ts', import.meta.url);

test('the agent core links, finds its devices and closes, with no HTTP of its own', async () => {
  const agent = await openAgent({
    devices: [
      { endpoint: '0', ip: '127.0.0.3', port: 26000, clusterId: 1n },
      { endpoint: '1', ip: '127.0.0.4', port: 26001, clusterId: 2n },
    ],
    threads: 1,
    workerFilename,
    eventWaitMs: 20,
    metrics: createRegistry(),
  });
  try {
    expect('managementApp' in agent).toBe(false);
    expect(agent.endpointFor({ ip: '127.0.0.4', port: 0 })).toBe('1');
    expect(agent.endpointFor({ ip: '127.0.0.9', port: 0 })).toBeUndefined();
    const result = await agent.linkManager.linkClusters([{ endpoint: '1', remoteClusterId: 9n, remote: { ip: '127.0.0.2', port: 26000 } }]);
    expect(result).toEqual({ ret: S.LLM_SUCCESS, rets: [S.LLM_SUCCESS] });
    expect(agent.role.roleStatus).toBe('RoleUnknown');
  } finally {
    await agent.close();
    await agent.close();
  }
});

test('links run on the runtime threads by default, on worker threads when the settings say so', async () => {
  for (const linkThreads of [undefined, 'native', 'workers'] as const) {
    const agent = await openAgent({
      devices: [{ endpoint: '0', ip: '127.0.0.3', port: 0, clusterId: 3n }],
      threads: 1,
      eventWaitMs: 20,
      metrics: createRegistry(),
      ...(linkThreads === undefined ? {} : { linkThreads }),
    });
    try {
      expect(agent.linkThreads).toBeUndefined();
      expect(await agent.metrics.metrics()).not.toMatch(/^pdlink_link_threads\{/m);
      // Nobody listens on port 1: the call is made and refused.
      const result = await agent.linkManager.linkClusters([{ endpoint: '0', remoteClusterId: 9n, remote: { ip: '127.0.0.2', port: 1 } }]);
      expect(result).toEqual({ ret: S.LLM_FAILED, rets: [S.LLM_LINK_FAILED] });
      expect(agent.linkThreads).toBe(linkThreads ?? 'native');
      expect(await agent.metrics.metrics()).toContain(`pdlink_link_threads{path="${linkThreads ?? 'native'}"} 1`);
    } finally {
      await agent.close();
    }
  }
});

test('no devices is refused before anything opens', async () => {
  await expect(openAgent({ devices: [], metrics: createRegistry() })).rejects.toThrow('devices must name at least one local device');
});
