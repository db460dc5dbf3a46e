import { expect, test } from 'bun:test';
import { EVENT_KIND, LINK_STATE, SIDE } from '../ffi/layout.ts';
import { eventOf, linkOf, sideOf } from './protocol.ts';

test('runtime events cross the worker door in names; a kind this build does not know is dropped', () => {
  const raw = { kind: EVENT_KIND.peerLinked, side: SIDE.server, remoteClusterId: 7n, code: 0, timeMs: 1234 };
  expect(eventOf(3, raw)).toEqual({ handle: 3, kind: 'peer-linked', side: 'server', remoteClusterId: 7n, code: 0, timeMs: 1234 });
  expect(eventOf(3, { ...raw, kind: EVENT_KIND.linkUnusable, side: SIDE.client })).toMatchObject({ kind: 'link-unusable', side: 'client' });
  expect(eventOf(3, { ...raw, kind: 99 })).toBeUndefined();
});

test('runtime links cross in names: side and state, unknown states named so', () => {
  const raw = {
    remoteClusterId: 9n,
    side: SIDE.server,
    state: LINK_STATE.unusable,
    transfersInFlight: 2,
    remoteIp: '127.0.0.5',
    remotePort: 41000,
    sameHost: true,
  };
  expect(linkOf(raw)).toEqual({ ...raw, side: 'server', state: 'unusable' });
  expect(linkOf({ ...raw, side: SIDE.client, state: LINK_STATE.linked })).toMatchObject({ side: 'client', state: 'linked' });
  expect(linkOf({ ...raw, state: 42 }).state).toBe('unknown');
  expect([sideOf(SIDE.client), sideOf(SIDE.server)]).toEqual(['client', 'server']);
});
