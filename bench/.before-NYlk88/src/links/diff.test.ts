import { describe, expect, test } from 'bun:test';
import { diffLinks, type DesiredLink } from './diff.ts';
import type { LinkInfo, LinkSide, LinkState } from './types.ts';

const want = (id: number, port = 26000, endpoint = '0'): DesiredLink => ({
  endpoint,
  remoteClusterId: BigInt(id),
  remote: { ip: '127.0.0.2', port },
});
const entry = (id: number, state: LinkState, side: LinkSide = 'client', port: number | undefined = 26000): LinkInfo => ({
  endpoint: '0',
  remoteClusterId: BigInt(id),
  remote: port === undefined ? undefined : { ip: '127.0.0.2', port },
  side,
  state,
  code: 0,
  since: 0,
});
const ids = (items: readonly { remoteClusterId: bigint }[]) => items.map((i) => i.remoteClusterId);

describe('diffLinks', () => {
  test('links what is new, unlinks what is gone, keeps what is up', () => {
    const diff = diffLinks([want(1), want(2), want(3)], [entry(1, 'linked'), entry(4, 'linked'), entry(5, 'failed')], {
      side: 'client',
    });
    expect(ids(diff.up)).toEqual([1n]);
    expect(ids(diff.link)).toEqual([2n, 3n]);
    expect(diff.clear).toEqual([]);
    expect(ids(diff.unlink)).toEqual([4n, 5n]);
  });

  test('a failed desired link is linked again after clearing its local end; a moved peer is unlinked and relinked', () => {
    const failed = entry(1, 'failed');
    const moved = entry(2, 'linked', 'client', 26001);
    const diff = diffLinks([want(1), want(2)], [failed, moved], { side: 'client' });
    expect(ids(diff.link)).toEqual([1n]);
    expect(diff.clear).toEqual([failed]);
    expect(diff.unlink).toEqual([moved]);
    expect(ids(diff.up)).toEqual([2n]);
  });

  test('links another call is moving are busy, neither linked nor unlinked', () => {
    const diff = diffLinks([want(1), want(2)], [entry(1, 'linking'), entry(2, 'unlinking'), entry(3, 'linking')], { side: 'client' });
    expect(ids(diff.busy)).toEqual([1n, 2n]);
    expect(diff.link).toEqual([]);
    expect(diff.unlink).toEqual([]);
  });

  test('a link the caller knows is stale is linked again after clearing it', () => {
    const stale = entry(1, 'linked');
    const diff = diffLinks([want(1)], [stale], { side: 'client', stale: () => true });
    expect(diff.up).toEqual([]);
    expect(ids(diff.link)).toEqual([1n]);
    expect(diff.clear).toEqual([stale]);
  });

  test('the client side leaves server links alone; the server side judges them by cluster alone', () => {
    const current = [entry(7, 'linked', 'server', undefined), entry(8, 'linked', 'server', 41234), entry(9, 'failed', 'server')];
    expect(diffLinks([], current, { side: 'client' }).unlink).toEqual([]);
    const server = diffLinks([want(8, 26000)], current, { side: 'server' });
    expect(ids(server.unlink)).toEqual([7n]);
    expect(ids(server.up)).toEqual([8n]);
  });

  test('desired links on different endpoints with the same cluster are different links', () => {
    const diff = diffLinks([want(1, 26000, '0'), want(1, 26000, '1')], [entry(1, 'linked')], { side: 'client' });
    expect(diff.up.map((d) => d.endpoint)).toEqual(['0']);
    expect(diff.link.map((d) => d.endpoint)).toEqual(['1']);
  });
});
