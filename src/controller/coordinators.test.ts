import { describe, expect, test } from 'bun:test';
import { CoordinatorSet } from './coordinators.ts';
import type { Outgoing, OutgoingReply } from './outgoing.ts';

/** A Coordinator that refuses connections until told to answer. */
class Coordinator implements Outgoing {
  up = false;
  refreshStatus = 200;

  async get(): Promise<OutgoingReply> {
    if (!this.up) throw new Error('connect ECONNREFUSED 127.0.0.1:1026');
    return { status: 200, body: {} };
  }

  async post(): Promise<OutgoingReply> {
    if (!this.up) throw new Error('connect ECONNREFUSED 127.0.0.1:1026');
    return { status: this.refreshStatus, body: this.refreshStatus === 200 ? undefined : { error: 'refused' } };
  }
}

function setup() {
  const client = new Coordinator();
  let now = 1000;
  const set = new CoordinatorSet(['http://127.0.0.1:1026/'], { client, now: () => now, snapshot: () => ({ ids: [], instances: [] }) });
  return { client, set, tick: () => (now += 1000) };
}

describe('CoordinatorSet', () => {
  test("a start-up ECONNREFUSED is the entry's last error only until a push goes through", async () => {
    const { client, set, tick } = setup();
    expect(await set.pushAll()).toBe(false);
    expect(set.views()[0]).toMatchObject({
      url: 'http://127.0.0.1:1026',
      reachable: false,
      lastError: { message: expect.stringContaining('ECONNREFUSED') },
    });
    client.up = true;
    tick();
    expect(await set.pushAll()).toBe(true);
    expect(set.views()[0]).toMatchObject({ reachable: true, lastPushAt: 2000, lastError: undefined });
  });

  test('a refused snapshot stays the last error, with its status, while the Coordinator answers', async () => {
    const { client, set } = setup();
    client.up = true;
    client.refreshStatus = 400;
    expect(await set.pushAll()).toBe(false);
    expect(set.views()[0]).toMatchObject({
      reachable: true,
      lastPushAt: undefined,
      lastError: { message: expect.stringContaining('refresh answered 400') },
    });
  });
});
