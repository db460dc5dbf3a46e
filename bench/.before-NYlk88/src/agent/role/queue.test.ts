import { expect, test } from 'bun:test';
import { PdlinkError } from '../../core/errors.ts';
import type { Role } from '../../schema/role.ts';
import { MAX_QUEUED_POSTS, RoleJobQueue, type RoleJob, type RolePostJob } from './queue.ts';

const post = (role: Role, acceptedAt: number): RolePostJob => ({
  kind: 'post',
  request: { role, local: { serverIp: '127.0.0.2', devices: [] }, peers: [] },
  plan: [],
  acceptedAt,
});

const label = (job: RoleJob) => (job.kind === 'post' ? `${job.request.role}@${job.acceptedAt}` : job.kind);

/** A queue whose jobs each wait until the test releases them, one at a time. */
function gatedQueue() {
  const ran: string[] = [];
  const gates: (() => void)[] = [];
  let started = Promise.withResolvers<void>();
  const queue = new RoleJobQueue((job) => {
    ran.push(label(job));
    started.resolve();
    return new Promise<void>((resolve) => gates.push(resolve));
  });
  const nextStarted = async () => {
    await started.promise;
    started = Promise.withResolvers<void>();
  };
  return { queue, ran, gates, nextStarted };
}

test('jobs run one at a time in arrival order; a waiting post of the same role is replaced by the newer one', async () => {
  const { queue, ran, gates, nextStarted } = gatedQueue();
  queue.post(post('decode', 1));
  await nextStarted();
  queue.post(post('prefill', 2));
  queue.post(post('prefill', 3));
  queue.clear('0', 7n);
  queue.post(post('prefill', 4));
  expect(ran).toEqual(['decode@1']);
  expect(queue.posts).toBe(2);
  for (const expected of [['prefill@3'], ['clear'], ['prefill@4']]) {
    gates.shift()?.();
    await nextStarted();
    expect(ran.slice(-1)).toEqual(expected);
  }
  expect(queue.posts).toBe(0);
  gates.shift()?.();
  await queue.settled();
  expect(ran).toEqual(['decode@1', 'prefill@3', 'clear', 'prefill@4']);
});

test('a retry round waits at most once', async () => {
  const { queue, ran, gates, nextStarted } = gatedQueue();
  queue.retry();
  await nextStarted();
  queue.retry();
  queue.retry();
  gates.shift()?.();
  await nextStarted();
  gates.shift()?.();
  await queue.settled();
  expect(ran).toEqual(['retry', 'retry']);
});

test(`more than ${MAX_QUEUED_POSTS} waiting posts → 429, the waiting ones kept`, async () => {
  const { queue, gates, nextStarted } = gatedQueue();
  queue.post(post('decode', 0));
  await nextStarted();
  for (let i = 1; i <= MAX_QUEUED_POSTS; i++) queue.post(post(i % 2 === 0 ? 'decode' : 'prefill', i));
  expect(queue.posts).toBe(MAX_QUEUED_POSTS);
  const refused = (() => {
    try {
      queue.post(post('prefill', 99));
    } catch (err) {
      return err;
    }
  })();
  expect(refused).toBeInstanceOf(PdlinkError);
  expect((refused as PdlinkError).code).toBe('too_many_requests');
  expect(queue.posts).toBe(MAX_QUEUED_POSTS);
  queue.close();
  gates.shift()?.();
  await queue.settled();
});

test('close drops the waiting jobs, lets the running one finish, and runs no more', async () => {
  const { queue, ran, gates, nextStarted } = gatedQueue();
  queue.post(post('decode', 1));
  await nextStarted();
  queue.post(post('prefill', 2));
  queue.retry();
  queue.close();
  expect(queue.posts).toBe(0);
  let settled = false;
  const done = queue.settled().then(() => (settled = true));
  await Promise.resolve();
  expect(settled).toBe(false);
  gates.shift()?.();
  await done;
  queue.post(post('prefill', 3));
  queue.clear('0', 7n);
  await queue.settled();
  expect(ran).toEqual(['decode@1']);
});
