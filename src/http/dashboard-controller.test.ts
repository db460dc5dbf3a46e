import { expect, test } from 'bun:test';
import type { MemberView } from '../controller/controller.ts';
import { memberLinks } from './dashboard-controller.ts';

function member(id: number, role: string, extra: Partial<MemberView> = {}): MemberView {
  return {
    id,
    role,
    group: 0,
    state: 'serving',
    reachable: true,
    lastSeenAt: 0,
    roleStatus: 'RoleReady',
    desiredPeers: [],
    linkedPeers: [],
    inSnapshot: true,
    lastError: undefined,
    inferenceUrl: `http://127.0.0.${id}:1025`,
    resources: undefined,
    failedLinks: new Map(),
    move: undefined,
    roleFixed: false,
    ...extra,
  };
}

test("links follow each D's desired peers: linked ok, reported failed with its code, a gone side failed, else linking", () => {
  const members = [
    member(0, 'prefill'),
    member(1, 'prefill'),
    member(2, 'prefill', { state: 'down' }),
    member(3, 'prefill'),
    member(10, 'decode', { desiredPeers: [0, 1, 2, 3], linkedPeers: [0], failedLinks: new Map([[1, 'LLM_LINK_FAILED']]) }),
  ];
  expect(memberLinks(members)).toEqual([
    { p: 0, d: 10, state: 'ok', code: null },
    { p: 1, d: 10, state: 'failed', code: 'LLM_LINK_FAILED' },
    { p: 2, d: 10, state: 'failed', code: 'instance 2 down' },
    { p: 3, d: 10, state: 'linking', code: null },
  ]);
});

test("a D that is down fails all its links, whatever it last reported; a P's report of the link counts too", () => {
  const members = [
    member(0, 'prefill', { failedLinks: new Map([[11, 'LLM_TIMEOUT']]) }),
    member(10, 'decode', { state: 'unreachable', desiredPeers: [0], linkedPeers: [0] }),
    member(11, 'decode', { desiredPeers: [0] }),
  ];
  expect(memberLinks(members)).toEqual([
    { p: 0, d: 10, state: 'failed', code: 'instance 10 unreachable' },
    { p: 0, d: 11, state: 'failed', code: 'LLM_TIMEOUT' },
  ]);
});
