import { describe, expect, test } from 'bun:test';
import { RoleWatcher } from './roles.ts';

describe('the role watcher of pdlink bench --controller-url', () => {
  test('keeps first states and changes only, and the moves that ended after it started', async () => {
    const began = Date.now();
    const bodies: unknown[] = [
      {
        instances: [
          { id: 100, role: 'prefill', state: 'serving' },
          { id: 200, role: 'decode', state: 'serving' },
        ],
        planner: {
          history: [
            {
              id: 7,
              from: 'decode',
              to: 'prefill',
              by: 'operator',
              outcome: 'done',
              started_at: new Date(began - 60_000).toISOString(),
              ended_at: new Date(began - 50_000).toISOString(),
            },
          ],
        },
      },
      new Error('connection refused'),
      {
        instances: [
          { id: 100, role: 'prefill', state: 'moving' },
          { id: 200, role: 'decode', state: 'serving' },
        ],
        planner: null,
      },
      {
        instances: [
          { id: 100, role: 'decode', state: 'serving' },
          { id: 200, role: 'decode', state: 'serving' },
          { id: 'bad', role: 1 },
        ],
        planner: {
          history: [
            {
              id: 100,
              from: 'prefill',
              to: 'decode',
              by: 'planner',
              outcome: 'done',
              started_at: new Date(began).toISOString(),
              ended_at: new Date(began + 10).toISOString(),
            },
          ],
        },
      },
    ];
    const asked: string[] = [];
    const watcher = new RoleWatcher('http://127.0.0.1:1030/', async (url) => {
      asked.push(url);
      const next = bodies.shift();
      if (next instanceof Error) throw next;
      return next ?? { instances: [] };
    });
    // Three reads by hand (start() reads on a timer), then stop() takes the last one.
    for (let i = 0; i < 3; i++) await watcher.poll();
    const timeline = await watcher.stop();
    expect(asked.every((u) => u === 'http://127.0.0.1:1030/v1/cluster')).toBe(true);
    expect(timeline.controller).toBe('http://127.0.0.1:1030');
    expect(timeline.polls).toBe(3);
    expect(timeline.failedPolls).toBe(1);
    expect(timeline.changes.map((c) => `${c.id} ${c.role} ${c.state}`)).toEqual([
      '100 prefill serving',
      '200 decode serving',
      '100 prefill moving',
      '100 decode serving',
    ]);
    expect(timeline.moves).toHaveLength(1);
    expect(timeline.moves[0]).toMatchObject({ id: 100, from: 'prefill', to: 'decode', by: 'planner', outcome: 'done' });
    expect(await watcher.stop()).toBe(timeline);
  });
});
