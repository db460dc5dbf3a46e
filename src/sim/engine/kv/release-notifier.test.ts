import { expect, test } from 'bun:test';
import { ReleaseNotifier } from './release-notifier.ts';

test('notices to one prefiller ride together while one is in flight; failures are dropped', async () => {
  const sent: [string, string[]][] = [];
  let release: () => void = () => {};
  let third: () => void = () => {};
  const thirdSent = new Promise<void>((resolve) => (third = resolve));
  let fourth: () => void = () => {};
  const fourthSent = new Promise<void>((resolve) => (fourth = resolve));
  const notifier = new ReleaseNotifier(async (url, ids) => {
    sent.push([url, [...ids]]);
    if (sent.length === 3) third();
    if (sent.length === 4) fourth();
    if (sent.length === 1) await new Promise<void>((resolve) => (release = resolve));
    if (ids.includes('boom')) throw new Error('unreachable prefiller');
  });
  notifier.notify('127.0.0.2', 31000, 'a');
  notifier.notify('127.0.0.2', 31000, 'b');
  notifier.notify('127.0.0.2', 31000, 'c');
  notifier.notify('::1', 31001, 'boom');
  expect(sent).toEqual([
    ['http://127.0.0.2:31000/sim/kv/release', ['a']],
    ['http://[::1]:31001/sim/kv/release', ['boom']],
  ]);
  release();
  await thirdSent;
  expect(sent.at(-1)).toEqual(['http://127.0.0.2:31000/sim/kv/release', ['b', 'c']]);
  notifier.notify('127.0.0.2', 31000, 'd');
  await fourthSent;
  expect(sent.at(-1)).toEqual(['http://127.0.0.2:31000/sim/kv/release', ['d']]);
});
