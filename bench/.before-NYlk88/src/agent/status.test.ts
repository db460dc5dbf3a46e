import { expect, test } from 'bun:test';
import { LLM_STATUS as S } from '../core/llm-status.ts';
import type { LinkInfo } from '../links/types.ts';
import type { PlannedLink } from './role/plan.ts';
import { linkView, statusBody } from './status.ts';

const entry = (state: LinkInfo['state'], code: number = S.LLM_SUCCESS, side: LinkInfo['side'] = 'client'): LinkInfo => ({
  endpoint: '0',
  remoteClusterId: 7n,
  remote: { ip: '127.0.0.3', port: 26000 },
  side,
  state,
  code,
  since: 0,
});
const idle = { failures: 0, lastCode: undefined, nextAttemptAt: undefined };

test('link views: ok on either side, linking while in flight or awaited, failed with the code name', () => {
  expect(linkView(entry('linked'), idle)).toBe('ok');
  expect(linkView(entry('linked', S.LLM_SUCCESS, 'server'), undefined)).toBe('ok');
  expect(linkView(entry('linking'), idle)).toBe('linking');
  expect(linkView(entry('unlinking'), idle)).toBe('linking');
  expect(linkView(undefined, idle)).toBe('linking');
  expect(linkView(entry('failed', S.LLM_TIMEOUT), idle)).toBe('failed: LLM_TIMEOUT');
  expect(linkView(entry('failed', 12345), idle)).toBe('failed: LLM_FAILED');
  // No entry (cleared for the retry) or a stale one: the last failure is what the operator sees.
  expect(linkView(undefined, { ...idle, lastCode: S.LLM_LINK_FAILED })).toBe('failed: LLM_LINK_FAILED');
  expect(linkView(entry('linked'), { ...idle, lastCode: S.LLM_NOT_YET_LINK }, true)).toBe('failed: LLM_NOT_YET_LINK');
});

test('the status body: MindIE names, counts, retry countdown, exact cluster ids, last error', () => {
  const plan = (device: number, id: bigint): PlannedLink => ({
    key: `0\u0000${id}`,
    target: '5.6.7.8',
    device,
    endpoint: String(device),
    peerLogicalId: 0,
    remote: { ip: '::1', port: 26000 },
    remoteClusterId: id,
  });
  const body = statusBody({
    roleStatus: 'RoleSwitching',
    currentRole: 'decode',
    switchingTo: undefined,
    queuedPosts: 0,
    lastError: { message: 'link to 5.6.7.8 device 1: LLM_TIMEOUT', at: Date.UTC(2026, 0, 1) },
    links: [
      { plan: plan(0, 7n), view: 'ok', retry: idle },
      { plan: plan(1, 1n << 63n), view: 'failed: LLM_TIMEOUT', retry: { failures: 2, lastCode: S.LLM_TIMEOUT, nextAttemptAt: 1400 } },
      { plan: plan(2, 9n), view: 'linking', retry: undefined },
    ],
    now: 1000,
  });
  expect(body).toEqual({
    service: {
      roleStatus: 'RoleSwitching',
      currentRole: 'decode',
      queuedPosts: 0,
      lastError: { message: 'link to 5.6.7.8 device 1: LLM_TIMEOUT', at: '2026-01-01T00:00:00.000Z' },
    },
    linkStatus: {
      desired: 3,
      ok: 1,
      linking: 1,
      failed: 1,
      peers: [
        { target: '5.6.7.8', device: 0, link: 'ok', localDevice: 0, peerDevice: 0, remote: '[::1]:26000', remoteClusterId: 7, failures: 0 },
        {
          target: '5.6.7.8',
          device: 1,
          link: 'failed: LLM_TIMEOUT',
          localDevice: 1,
          peerDevice: 0,
          remote: '[::1]:26000',
          remoteClusterId: '9223372036854775808',
          failures: 2,
          retryInMs: 400,
        },
        {
          target: '5.6.7.8',
          device: 2,
          link: 'linking',
          localDevice: 2,
          peerDevice: 0,
          remote: '[::1]:26000',
          remoteClusterId: 9,
          failures: 0,
        },
      ],
    },
  });
  expect(
    statusBody({
      roleStatus: 'RoleUnknown',
      currentRole: undefined,
      switchingTo: 'prefill',
      queuedPosts: 1,
      lastError: undefined,
      links: [],
      now: 0,
    }).service,
  ).toEqual({
    roleStatus: 'RoleUnknown',
    currentRole: 'none',
    switchingTo: 'prefill',
    queuedPosts: 1,
  });
});

test('the resource block appears only when the engine reports it', () => {
  const base = {
    roleStatus: 'RoleReady' as const,
    currentRole: 'decode' as const,
    switchingTo: undefined,
    queuedPosts: 0,
    lastError: undefined,
    links: [],
    now: 0,
  };
  expect('resource' in statusBody(base)).toBe(false);
  const resource = { totalSlotsNum: 64, availSlotsNum: 60, totalBlockNum: 1024, availBlockNum: 1000 };
  expect(statusBody({ ...base, resource }).resource).toEqual(resource);
});
