import { describe, expect, test } from 'bun:test';
import { LLM_STATUS } from '../core/llm-status.ts';
import { CallTimeline } from './call-timeline.ts';
import { applyRuntimeEvent } from './runtime-events.ts';
import { LinkTable } from './table.ts';

function parts() {
  return { table: new LinkTable(() => 1000), timeline: new CallTimeline() };
}

describe('applyRuntimeEvent', () => {
  test('a peer linking to us is a server-side link; its loss forgets it', () => {
    const { table, timeline } = parts();
    expect(applyRuntimeEvent(table, timeline, '0', { kind: 'peer-linked', side: 'server', remoteClusterId: 7n, code: 0 })).toBe(true);
    expect(table.get('0', 7n)).toMatchObject({ state: 'linked', side: 'server' });
    const seen: unknown[] = [];
    table.onChange((e) => seen.push({ to: e.to, reason: e.reason, code: e.code }));
    applyRuntimeEvent(table, timeline, '0', { kind: 'peer-lost', side: 'server', remoteClusterId: 7n, code: 0 });
    expect(table.get('0', 7n)).toBeUndefined();
    expect(seen).toEqual([{ to: 'unlinked', reason: 'peer-lost', code: LLM_STATUS.LLM_LINK_FAILED }]);
  });

  test('a linked client link the runtime dropped stays as failed, for its owner to relink', () => {
    const { table, timeline } = parts();
    table.set('0', 9n, { state: 'linked', side: 'client', reason: 'linked' });
    const seen: unknown[] = [];
    table.onChange((e) => seen.push(e.reason));
    applyRuntimeEvent(table, timeline, '0', { kind: 'link-unusable', side: 'client', remoteClusterId: 9n, code: 0 });
    expect(table.get('0', 9n)).toMatchObject({ state: 'failed', side: 'client', code: LLM_STATUS.LLM_WAIT_PROC_TIMEOUT });
    expect(seen).toEqual(['link-unusable']);
  });

  test('an event older than the last settled call is ignored and changes nothing', () => {
    const { table, timeline } = parts();
    table.set('0', 9n, { state: 'linked', side: 'client', reason: 'linked' });
    timeline.record('0', 9n, 500);
    const before = table.get('0', 9n);
    expect(applyRuntimeEvent(table, timeline, '0', { kind: 'peer-lost', side: 'client', remoteClusterId: 9n, code: 0, timeMs: 400 })).toBe(
      false,
    );
    expect(table.get('0', 9n)).toEqual(before!);
  });
});
