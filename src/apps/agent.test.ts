import { expect, test } from 'bun:test';
import { createInstanceAgent } from './agent.ts';

const workerFilename = new URL('../../test/fixtures/links/sim-worker.ts', import.meta.url);

test('the agent serves /v1/links and /metrics over its pool and closes cleanly', async () => {
  const agent = await createInstanceAgent({
    devices: [
      { endpoint: '0', ip: '127.0.0.3', port: 26000, clusterId: 1n },
      { endpoint: '1', ip: '127.0.0.4', port: 26001, clusterId: 2n },
    ],
    threads: 1,
    workerFilename,
    eventWaitMs: 20,
  });
  try {
    const post = (body: unknown) =>
      agent.managementApp.request('/v1/links/link', {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
    const res = await post({
      clusters: [
        { remote_cluster_id: 9, remote_ip_info: '127.0.0.2:26000', local_ip_info: '127.0.0.4' },
        { remote_cluster_id: 10, remote_ip_info: '127.0.0.2:1' },
      ],
    });
    expect(res.status).toBe(200);
    expect(((await res.json()) as { rets: { name: string }[] }).rets.map((r) => r.name)).toEqual(['LLM_SUCCESS', 'LLM_LINK_FAILED']);
    const links = (await (await agent.managementApp.request('/v1/links')).json()) as { links: { endpoint: string; state: string }[] };
    expect(links.links.map((l) => `${l.endpoint}:${l.state}`)).toEqual(['0:failed', '1:linked']);
    expect(await (await agent.managementApp.request('/metrics')).text()).toContain('pdlink_links{state="linked",side="client"} 1');
    expect((await agent.managementApp.request('/v1/nope')).status).toBe(404);
  } finally {
    await agent.close();
    await agent.close();
  }
  expect(agent.linkManager.list()).toHaveLength(2);
});

test('an agent needs at least one device', async () => {
  expect(createInstanceAgent({ devices: [], workerFilename })).rejects.toThrow(RangeError);
});

test('devices sharing an address: local_ip_info with a port picks the device at that port', async () => {
  const agent = await createInstanceAgent({
    devices: [
      { endpoint: '0', ip: '127.0.0.3', port: 26000, clusterId: 1n },
      { endpoint: '1', ip: '127.0.0.3', port: 26001, clusterId: 2n },
    ],
    threads: 1,
    workerFilename,
    eventWaitMs: 20,
  });
  try {
    const res = await agent.managementApp.request('/v1/links/link', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        clusters: [
          { remote_cluster_id: 9, remote_ip_info: '127.0.0.2:26000', local_ip_info: '127.0.0.3:26000' },
          { remote_cluster_id: 10, remote_ip_info: '127.0.0.2:26000', local_ip_info: '127.0.0.3:26001' },
        ],
      }),
    });
    expect(res.status).toBe(200);
    const links = (await (await agent.managementApp.request('/v1/links')).json()) as {
      links: { endpoint: string; remote_cluster_id: number }[];
    };
    expect(links.links.map((l) => `${l.endpoint}:${l.remote_cluster_id}`).sort()).toEqual(['0:9', '1:10']);
  } finally {
    await agent.close();
  }
});

test('with processMetrics the agent exposes the process metrics under pdlink_process_, without them none', async () => {
  const make = (processMetrics: boolean) =>
    createInstanceAgent({
      devices: [{ endpoint: '0', ip: '127.0.0.3', port: 26000, clusterId: 1n }],
      threads: 1,
      workerFilename,
      eventWaitMs: 20,
      processMetrics,
    });
  const withMetrics = await make(true);
  try {
    const text = await (await withMetrics.managementApp.request('/metrics')).text();
    expect(text).toContain('# TYPE pdlink_process_process_cpu_seconds_total counter');
    expect(text).toContain('# TYPE pdlink_process_process_resident_memory_bytes gauge');
    expect(text).toMatch(/^pdlink_process_process_start_time_seconds \d+$/m);
  } finally {
    await withMetrics.close();
  }
  const without = await make(false);
  try {
    expect(await (await without.managementApp.request('/metrics')).text()).not.toContain('pdlink_process_');
  } finally {
    await without.close();
  }
});
