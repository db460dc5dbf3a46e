import { expect, test } from 'bun:test';
import { readAgentStatus } from './agent-status.ts';

test('a peer is linked only when every device row is ok; the resource block is read when complete', () => {
  const o = readAgentStatus({
    service: { roleStatus: 'RoleReady', currentRole: 'decode', queuedPosts: 0 },
    linkStatus: {
      peers: [
        { target: '10.0.0.1', device: 0, link: 'ok' },
        { target: '10.0.0.1', device: 1, link: 'ok' },
        { target: '10.0.0.2', device: 0, link: 'ok' },
        { target: '10.0.0.2', device: 1, link: 'failed: LLM_LINK_FAILED' },
      ],
    },
    resource: { totalSlotsNum: 8, availSlotsNum: 3, totalBlockNum: 64, availBlockNum: 10 },
  })!;
  expect([...o.linkedPeers]).toEqual(['10.0.0.1']);
  expect(o.resources).toEqual({ totalSlots: 8, availSlots: 3, totalBlocks: 64, availBlocks: 10 });
  expect(
    readAgentStatus({ service: { roleStatus: 'RoleUnknown', currentRole: 'none' }, resource: { totalSlotsNum: 8 } })!.resources,
  ).toBeUndefined();
  expect(readAgentStatus({ nope: true })).toBeUndefined();
  expect(readAgentStatus('text')).toBeUndefined();
});

test('a failed link keeps its LLM code by peer, for the topology page; ok and linking rows keep none', () => {
  const o = readAgentStatus({
    service: { roleStatus: 'RoleReady', currentRole: 'decode', queuedPosts: 0 },
    linkStatus: {
      peers: [
        { target: '10.0.0.1', device: 0, link: 'ok' },
        { target: '10.0.0.2', device: 0, link: 'failed: LLM_LINK_FAILED' },
        { target: '10.0.0.3', device: 0, link: 'linking' },
      ],
    },
  })!;
  expect([...o.linkFailures]).toEqual([['10.0.0.2', 'LLM_LINK_FAILED']]);
});
