import { describe, expect, test } from 'bun:test';
import { PdlinkError } from '../core/errors.ts';
import { MAX_JSON_DEPTH } from '../core/limits.ts';
import { exampleSnapshot, type ExampleBody, seedExample } from '../../test/doubles/refresh-examples.ts';
import { parseRefresh } from '../schema/refresh.ts';
import { parseRefreshText } from '../schema/refresh-plain.ts';
import type { RegistryDiff } from './instance.ts';
import { ClusterRegistry } from './registry.ts';

const ids = (list: readonly { id: number }[]) => list.map((i) => i.id).sort((a, b) => a - b);

function seedWith(edit: (body: ExampleBody) => void): ExampleBody {
  const body = seedExample();
  edit(body);
  return body;
}

/** A registry whose clock the test sets. */
/** Applies `body` as the refresh route would: its JSON text through the route's parser and check. */
function applyAsRouted(registry: ClusterRegistry, body: unknown): RegistryDiff {
  return registry.apply(parseRefresh(parseRefreshText(JSON.stringify(body))));
}

function registryAt(now: { t: number }, errors: unknown[] = []): ClusterRegistry {
  return new ClusterRegistry({ now: () => now.t, onListenerError: (e) => errors.push(e) });
}

describe('apply', () => {
  test('the first snapshot adds every instance, mapped to the domain shape', () => {
    const registry = new ClusterRegistry();
    const diff = registry.apply(parseRefresh(seedExample()));
    expect(diff.generation).toBe(1);
    expect(ids(diff.added)).toEqual([0, 1]);
    expect(diff.updated).toEqual([]);
    expect(diff.removed).toEqual([]);
    const decode = registry.get(1)!;
    expect({ ...decode, wire: undefined }).toEqual({
      id: 1,
      ip: '0.0.0.0',
      port: 1025,
      metricPort: 1026,
      modelName: 'your_model_name',
      groupId: 0,
      maxSeqLen: 2048,
      maxOutputLen: 512,
      totalSlots: 200,
      totalBlocks: 1024,
      blockSize: 128,
      label: 3,
      role: 'decode',
      availSlots: 200,
      availBlocks: 1024,
      peers: [0],
      wire: undefined,
    });
    expect(decode.wire).toEqual(seedExample().instances[1]!);
    expect(registry.get(0)!.peers).toEqual([]);
    expect(registry.get(2)).toBeUndefined();
  });

  test('new ids are added, changed ones updated, missing ones removed, unchanged ones left alone', () => {
    const registry = new ClusterRegistry();
    registry.apply(parseRefresh(exampleSnapshot(4)));
    const before2 = registry.get(2)!;
    const before0 = registry.get(0)!;
    const next = exampleSnapshot(4); // P 0, 1 and D 2, 3 in full mesh
    next.ids = [0, 1, 2, 4];
    next.instances = next.instances.filter((i) => i.id !== 3);
    next.instances[0]!.dynamic_info.peers = [2];
    next.instances[1]!.dynamic_info.peers = [2];
    next.instances[2]!.dynamic_info.avail_slots_num = 10;
    next.instances.push({ ...structuredClone(next.instances[0]!), id: 4, dynamic_info: { avail_slots_num: 5, avail_block_num: 5 } });
    const diff = registry.apply(parseRefresh(next));
    expect(diff.generation).toBe(2);
    expect(ids(diff.added)).toEqual([4]);
    expect(ids(diff.removed)).toEqual([3]);
    expect(diff.updated.map((u) => u.after.id).sort()).toEqual([0, 1, 2]);
    const update2 = diff.updated.find((u) => u.after.id === 2)!;
    expect(update2.before).toBe(before2);
    expect(update2.before.availSlots).toBe(200);
    expect(update2.after.availSlots).toBe(10);
    expect(registry.get(2)!.availSlots).toBe(10);
    expect(registry.get(3)).toBeUndefined();
    expect(registry.get(0)).not.toBe(before0);
  });

  test('resending the same snapshot changes nothing but the generation', () => {
    const registry = new ClusterRegistry();
    registry.apply(parseRefresh(exampleSnapshot(8)));
    const first = registry.get(5);
    const diff = registry.apply(parseRefresh(exampleSnapshot(8)));
    expect(diff).toEqual({ generation: 2, added: [], updated: [], removed: [] });
    expect(registry.get(5)).toBe(first);
    expect(registry.generation).toBe(2);
  });

  test('a change in an unknown field counts as an update; key order does not', () => {
    const registry = new ClusterRegistry();
    registry.apply(parseRefresh(seedWith((b) => (b.instances[0]!.virtual_id = 1))));
    const changed = registry.apply(parseRefresh(seedWith((b) => (b.instances[0]!.virtual_id = 2))));
    expect(changed.updated.map((u) => u.after.id)).toEqual([0]);
    const reordered = seedWith((b) => {
      const { static_info, ...rest } = b.instances[0]!;
      b.instances[0] = { static_info: { ...static_info }, ...rest, virtual_id: 2 };
    });
    expect(registry.apply(parseRefresh(reordered)).updated).toEqual([]);
  });

  test('a role change is a removal plus an addition', () => {
    const registry = new ClusterRegistry();
    registry.apply(parseRefresh(seedExample()));
    const before = registry.get(1)!;
    const diff = registry.apply(parseRefresh(seedWith((b) => (b.instances[1]!.static_info.role = 85))));
    expect(diff.removed).toEqual([before]);
    expect(diff.added.map((i) => [i.id, i.role])).toEqual([[1, 'undefined']]);
    expect(diff.updated).toEqual([]);
    expect(registry.byRole('decode')).toEqual([]);
    expect(ids(registry.byRole('undefined'))).toEqual([1]);
  });

  test('an empty snapshot removes everything', () => {
    const registry = new ClusterRegistry();
    registry.apply(parseRefresh(seedExample()));
    const diff = registry.apply(parseRefresh({ ids: [], instances: [] }));
    expect(ids(diff.removed)).toEqual([0, 1]);
    expect(registry.all()).toEqual([]);
    expect(registry.counts()).toEqual({ prefill: 0, decode: 0, undefined: 0 });
  });
});

describe('apply, snapshots parsed by the refresh route', () => {
  /** The diff as ids, for comparing two registries fed the same snapshots. */
  const shape = (d: RegistryDiff) => ({
    added: ids(d.added),
    updated: d.updated.map((u) => [u.before.id, u.after.id]).sort((a, b) => a[0]! - b[0]!),
    removed: ids(d.removed),
  });

  test('snapshots with only known keys give the diffs, instances and order the structural comparison gives', () => {
    const steps: ExampleBody[] = [
      exampleSnapshot(40),
      exampleSnapshot(40),
      exampleSnapshot(40, { load: 3 }),
      (() => {
        // Some ids gone, one moved group, one changed role, peers reordered, the rest as before.
        const body = exampleSnapshot(40, { load: 3 });
        body.instances = body.instances.filter((i) => i.id !== 5 && i.id !== 30);
        body.ids = body.instances.map((i) => i.id);
        for (const i of body.instances) if (i.role === 68 || i.static_info.role === 68) i.dynamic_info.peers.reverse();
        body.instances.find((i) => i.id === 39)!.static_info.group_id = 7;
        const retyped = body.instances.find((i) => i.id === 20)!;
        retyped.static_info.role = 85;
        retyped.dynamic_info.peers = [];
        for (const i of body.instances) i.dynamic_info.peers = i.dynamic_info.peers.filter((p: number) => p !== 5 && p !== 30 && p !== 20);
        return body;
      })(),
      exampleSnapshot(40, { load: 3 }),
      exampleSnapshot(8),
      exampleSnapshot(40),
    ];
    const routed = new ClusterRegistry();
    const built = new ClusterRegistry();
    for (const body of steps) {
      const text = JSON.stringify(body);
      const a = routed.apply(parseRefresh(parseRefreshText(text)));
      const b = built.apply(parseRefresh(JSON.parse(text)));
      expect(shape(a)).toEqual(shape(b));
      expect(routed.all().map((i) => ({ ...i }))).toEqual(built.all().map((i) => ({ ...i })));
      for (const id of body.ids as number[]) expect(routed.get(id)).toEqual(built.get(id)!);
      for (const gone of [5, 30, 41]) if (!body.ids.includes(gone)) expect(routed.get(gone)).toBeUndefined();
    }
  });

  test('a snapshot with only known keys after one with other keys is compared whole: dropping a key is an update', () => {
    const registry = new ClusterRegistry();
    const extra = seedExample() as ExampleBody;
    extra.instances[0]!.bootstrap_port = 8998;
    applyAsRouted(registry, extra);
    const diff = applyAsRouted(registry, seedExample());
    expect(diff.updated.map((u) => u.after.id)).toEqual([0]);
    expect(registry.get(0)!.wire).not.toHaveProperty('bootstrap_port');
    // And back: the key added again is an update too.
    expect(applyAsRouted(registry, extra).updated.map((u) => u.after.id)).toEqual([0]);
  });

  test('an id removed and listed again comes back as an addition, and get() follows', () => {
    const registry = new ClusterRegistry();
    applyAsRouted(registry, exampleSnapshot(4));
    const fewer = exampleSnapshot(4);
    fewer.instances = fewer.instances.filter((i) => i.id !== 1);
    fewer.ids = fewer.instances.map((i) => i.id);
    for (const i of fewer.instances) i.dynamic_info.peers = i.dynamic_info.peers.filter((p: number) => p !== 1);
    expect(ids(applyAsRouted(registry, fewer).removed)).toEqual([1]);
    expect(registry.get(1)).toBeUndefined();
    const diff = applyAsRouted(registry, exampleSnapshot(4));
    expect(ids(diff.added)).toEqual([1]);
    expect(registry.get(1)?.id).toBe(1);
    expect(ids(registry.all())).toEqual([0, 1, 2, 3]);
  });
});

describe('read side', () => {
  test('all() keeps snapshot order; byRole() and counts() follow each apply', () => {
    const registry = new ClusterRegistry();
    expect(registry.all()).toEqual([]);
    expect(registry.byRole('prefill')).toEqual([]);
    expect(registry.counts()).toEqual({ prefill: 0, decode: 0, undefined: 0 });
    const body = exampleSnapshot(20);
    makeUndefined(body, 19);
    body.instances.reverse();
    registry.apply(parseRefresh(body));
    expect(registry.all().map((i) => i.id)).toEqual(body.instances.map((i) => i.id as number));
    expect(ids(registry.byRole('prefill'))).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 16, 17]);
    expect(ids(registry.byRole('decode'))).toEqual([8, 9, 10, 11, 12, 13, 14, 15, 18]);
    expect(ids(registry.byRole('undefined'))).toEqual([19]);
    expect(registry.counts()).toEqual({ prefill: 10, decode: 9, undefined: 1 });
  });

  test('byRole returns the same index until the next apply', () => {
    const registry = new ClusterRegistry();
    registry.apply(parseRefresh(exampleSnapshot(4)));
    expect(registry.byRole('decode')).toBe(registry.byRole('decode'));
  });

  test('generation and lastRefreshAt advance with every accepted snapshot', () => {
    const clock = { t: Date.UTC(2025, 0, 2, 3, 4, 5) };
    const registry = registryAt(clock);
    expect(registry.generation).toBe(0);
    expect(registry.lastRefreshAt).toBeUndefined();
    registry.apply(parseRefresh(seedExample()));
    clock.t += 1000;
    registry.apply(parseRefresh(seedExample()));
    expect(registry.generation).toBe(2);
    expect(registry.lastRefreshAt).toBe(clock.t);
  });
});

describe('onChange', () => {
  test('listeners get each non-empty diff synchronously, in subscription order, until unsubscribed', () => {
    const registry = new ClusterRegistry();
    const calls: string[] = [];
    const stopA = registry.onChange((d) => calls.push(`a${d.generation}`));
    registry.onChange((d) => calls.push(`b${d.generation}`));
    registry.apply(parseRefresh(seedExample()));
    expect(calls).toEqual(['a1', 'b1']);
    registry.apply(parseRefresh(seedExample())); // nothing changed: no call
    stopA();
    registry.apply(parseRefresh(seedWith((b) => (b.instances[0]!.dynamic_info.avail_slots_num = 1))));
    expect(calls).toEqual(['a1', 'b1', 'b3']);
  });

  test('a throwing listener is reported and neither the apply nor the other listeners suffer', () => {
    const reported: unknown[] = [];
    const registry = registryAt({ t: 0 }, reported);
    const seen: RegistryDiff[] = [];
    registry.onChange(() => {
      throw new Error('listener bug');
    });
    registry.onChange((d) => seen.push(d));
    const diff = registry.apply(parseRefresh(seedExample()));
    expect(seen).toEqual([diff]);
    expect(reported).toHaveLength(1);
    expect((reported[0] as Error).message).toBe('listener bug');
    expect(registry.all()).toHaveLength(2);
  });

  test('by default a throwing listener is logged with console.error', () => {
    const registry = new ClusterRegistry();
    const logged: unknown[][] = [];
    const original = console.error;
    console.error = (...args: unknown[]) => void logged.push(args);
    try {
      registry.onChange(() => {
        throw new Error('boom');
      });
      registry.apply(parseRefresh(seedExample()));
    } finally {
      console.error = original;
    }
    expect(logged).toHaveLength(1);
    expect(String(logged[0]![0])).toContain('listener threw');
  });

  test('a listener may unsubscribe itself or another while being called', () => {
    const registry = new ClusterRegistry();
    const calls: string[] = [];
    const stopB = registry.onChange(() => calls.push('b'));
    const stopA = registry.onChange(() => {
      calls.push('a');
      stopA();
      stopB();
    });
    registry.apply(parseRefresh(seedExample()));
    registry.apply(parseRefresh({ ids: [], instances: [] }));
    expect(calls).toEqual(['b', 'a']);
  });

  test('the same function subscribed twice is called twice and unsubscribed separately', () => {
    const registry = new ClusterRegistry();
    let count = 0;
    const listener = () => void count++;
    const stop1 = registry.onChange(listener);
    registry.onChange(listener);
    registry.apply(parseRefresh(seedExample()));
    stop1();
    registry.apply(parseRefresh({ ids: [], instances: [] }));
    expect(count).toBe(3);
  });

  test('applying from inside a listener is refused (reported), the outer apply stands', () => {
    const reported: unknown[] = [];
    const registry = registryAt({ t: 0 }, reported);
    registry.onChange(() => registry.apply(parseRefresh({ ids: [], instances: [] })));
    registry.apply(parseRefresh(seedExample()));
    expect(registry.all()).toHaveLength(2);
    expect(registry.generation).toBe(1);
    expect(String(reported[0])).toContain('ClusterRegistry.apply was called from an onChange listener');
  });
});

describe('view', () => {
  test('before any refresh: generation 0, no time, nothing registered', () => {
    expect(new ClusterRegistry().view()).toEqual({
      generation: 0,
      refreshed_at: null,
      counts: { prefill: 0, decode: 0, undefined: 0 },
      instances: [],
      groups: [],
      peers: [],
    });
  });

  test('lists wire objects as accepted, groups by group_id and peers per instance', () => {
    const clock = { t: Date.UTC(2025, 5, 1, 12, 0, 0) };
    const registry = registryAt(clock);
    const body = exampleSnapshot(20);
    makeUndefined(body, 19);
    body.instances[19]!.custom_field = { kept: true };
    registry.apply(parseRefresh(body));
    const view = registry.view();
    expect(view.generation).toBe(1);
    expect(view.refreshed_at).toBe('2025-06-01T12:00:00.000Z');
    expect(view.counts).toEqual({ prefill: 10, decode: 9, undefined: 1 });
    expect(view.instances as unknown[]).toEqual(plainInstances(body));
    expect(view.groups).toEqual([
      { group_id: 0, prefill: [0, 1, 2, 3, 4, 5, 6, 7], decode: [8, 9, 10, 11, 12, 13, 14, 15], undefined: [] },
      { group_id: 1, prefill: [16, 17], decode: [18], undefined: [19] },
    ]);
    expect(view.peers[0]).toEqual({ id: 0, role: 'prefill', peers: [8, 9, 10, 11, 12, 13, 14, 15] });
    expect(view.peers[18]).toEqual({ id: 18, role: 'decode', peers: [16, 17] });
    expect(view.peers[19]).toEqual({ id: 19, role: 'undefined', peers: [16, 17] });
    expect(view.peers[16]).toEqual({ id: 16, role: 'prefill', peers: [18] });
  });

  test('is cached until the next apply', () => {
    const registry = new ClusterRegistry();
    registry.apply(parseRefresh(seedExample()));
    const first = registry.view();
    expect(registry.view()).toBe(first);
    registry.apply(parseRefresh(seedExample()));
    expect(registry.view()).not.toBe(first);
    expect(registry.view().generation).toBe(2);
  });
});

/** `levels` arrays nested in one another, built without recursion. */
function nestedArrays(levels: number): unknown[] {
  let value: unknown[] = [];
  for (let i = 1; i < levels; i++) value = [value];
  return value;
}

describe('nesting (snapshots built by code, not parsed from HTTP)', () => {
  test(`an instance nested deeper than ${MAX_JSON_DEPTH} levels is refused by path, and nothing changes`, () => {
    const registry = new ClusterRegistry();
    registry.apply(parseRefresh(seedExample()));
    const view = JSON.stringify(registry.view());
    // 50,000 levels: the size of body that once took GET /v1/instances down.
    const deep = seedWith((body) => Object.assign(body.instances[1]!, { extra: nestedArrays(50_000) }));
    let thrown: unknown;
    try {
      registry.apply(parseRefresh(deep));
    } catch (err) {
      thrown = err;
    }
    expect(thrown).toBeInstanceOf(PdlinkError);
    const error = thrown as PdlinkError;
    expect(error.status).toBe(400);
    expect(error.issues).toEqual([
      { path: `instances[1].extra${'[0]'.repeat(MAX_JSON_DEPTH - 1)}`, message: `nested deeper than ${MAX_JSON_DEPTH} levels` },
    ]);
    expect(registry.generation).toBe(1);
    expect(JSON.stringify(registry.view())).toBe(view);
    // The same holds for an instance that is new to the registry.
    const added = seedWith((body) => {
      body.ids = [0, 1, 2];
      body.instances.push({ ...structuredClone(body.instances[1]!), id: 2, extra: nestedArrays(MAX_JSON_DEPTH) } as never);
    });
    expect(() => registry.apply(parseRefresh(added))).toThrow(`nested deeper than ${MAX_JSON_DEPTH} levels`);
    expect(registry.generation).toBe(1);
    expect(registry.get(2)).toBeUndefined();
  });

  test(`an instance exactly ${MAX_JSON_DEPTH} levels deep is kept, compared and listed`, () => {
    const registry = new ClusterRegistry();
    // The instance object is level 1, `extra` holds the other levels.
    const body = () => seedWith((b) => Object.assign(b.instances[1]!, { extra: nestedArrays(MAX_JSON_DEPTH - 1) }));
    expect(ids(registry.apply(parseRefresh(body())).added)).toEqual([0, 1]);
    const again = registry.apply(parseRefresh(body()));
    expect(again.updated).toEqual([]);
    expect(JSON.stringify(registry.view())).toContain('[[[');
  });
});

describe("plain snapshots (parsed from HTTP: only the schema's keys)", () => {
  test('a plain snapshot is listed and compared as it came, though its objects are not kept', () => {
    const registry = new ClusterRegistry();
    const text = JSON.stringify(exampleSnapshot(8));
    registry.apply(parseRefresh(parseRefreshText(text)));
    expect(JSON.stringify(registry.view().instances)).toBe(JSON.stringify(JSON.parse(text).instances));
    expect(registry.apply(parseRefresh(parseRefreshText(text))).updated).toEqual([]);
    const moved = exampleSnapshot(8);
    moved.instances[5]!.dynamic_info.avail_block_num = 7;
    const diff = applyAsRouted(registry, moved);
    expect(diff.updated.map((u) => u.after.id)).toEqual([5]);
    expect(registry.get(5)!.wire).toEqual(moved.instances[5]!);
    // A body built by code after plain ones is compared structurally, and equal is equal.
    expect(registry.apply(parseRefresh(moved)).updated).toEqual([]);
  });

  test('between plain snapshots, an instance whose free slots or blocks alone moved takes them in place', () => {
    const registry = new ClusterRegistry();
    applyAsRouted(registry, exampleSnapshot(8));
    const held = registry.get(5)!;
    const builtWire = held.wire;
    const moved = exampleSnapshot(8);
    moved.instances[5]!.dynamic_info.avail_slots_num = 3;
    moved.instances[5]!.dynamic_info.avail_block_num = 7;
    const diff = applyAsRouted(registry, moved);
    expect(diff.updated).toHaveLength(1);
    expect(diff.updated[0]!.before).toBe(held);
    expect(diff.updated[0]!.after).toBe(held);
    expect(registry.get(5)).toBe(held);
    expect([held.availSlots, held.availBlocks]).toEqual([3, 7]);
    // The wire object rebuilt before the move is not served again.
    expect(builtWire).not.toEqual(moved.instances[5]!);
    expect(registry.get(5)!.wire).toEqual(moved.instances[5]!);
    expect(JSON.stringify(registry.view().instances)).toBe(JSON.stringify(moved.instances));
  });

  test('the lists are kept when the same instances come in the same order, and built again when not', () => {
    const registry = new ClusterRegistry();
    applyAsRouted(registry, exampleSnapshot(8));
    const all = registry.all();
    const decodes = registry.byRole('decode');
    applyAsRouted(registry, exampleSnapshot(8, { load: 2 }));
    expect(registry.all()).toBe(all);
    expect(registry.byRole('decode')).toBe(decodes);
    const reordered = exampleSnapshot(8, { load: 2 });
    reordered.instances.reverse();
    applyAsRouted(registry, reordered);
    expect(registry.all()).not.toBe(all);
    const order = (list: readonly { id: number }[]) => list.map((i) => i.id);
    expect(order(registry.all())).toEqual([7, 6, 5, 4, 3, 2, 1, 0]);
    expect(order(registry.byRole('decode'))).toEqual(order(decodes).reverse());
    // An instance changed beyond its loads is a new object: the lists follow.
    const renamed = exampleSnapshot(8, { load: 2 });
    renamed.instances.reverse();
    renamed.instances[3]!.model_name = 'another';
    applyAsRouted(registry, renamed);
    expect(registry.all()[3]!.modelName).toBe('another');
    expect(registry.byRole(registry.all()[3]!.role)).toContain(registry.all()[3]!);
  });

  test('between plain snapshots, loads and anything else moved make a new instance; the old one keeps what it said', () => {
    const registry = new ClusterRegistry();
    applyAsRouted(registry, exampleSnapshot(8));
    const held = registry.get(5)!;
    const slots = held.availSlots;
    const moved = exampleSnapshot(8);
    moved.instances[5]!.dynamic_info.avail_slots_num = slots - 1;
    moved.instances[5]!.model_name = 'another';
    const diff = applyAsRouted(registry, moved);
    expect(diff.updated[0]!.before).toBe(held);
    expect(diff.updated[0]!.after).not.toBe(held);
    expect([held.availSlots, held.modelName]).toEqual([slots, exampleSnapshot(8).instances[5]!.model_name]);
    expect([registry.get(5)!.availSlots, registry.get(5)!.modelName]).toEqual([slots - 1, 'another']);
  });
});

describe('repeat', () => {
  test('counts the held snapshot once more: a new generation, refresh listeners told, no diff', () => {
    const clock = { t: 1000 };
    const registry = registryAt(clock);
    registry.apply(parseRefresh(exampleSnapshot(4)));
    const view = registry.view();
    const changes: RegistryDiff[] = [];
    const refreshes: number[] = [];
    registry.onChange((d) => changes.push(d));
    registry.onRefresh((g) => refreshes.push(g));
    clock.t = 2000;
    const diff = registry.repeat();
    expect(diff).toEqual({ generation: 2, added: [], updated: [], removed: [] });
    expect(changes).toEqual([]);
    expect(refreshes).toEqual([2]);
    expect(registry.lastRefreshAt).toBe(2000);
    expect(registry.view()).not.toBe(view);
    expect(registry.view().instances).toEqual(view.instances);
    expect(registry.all().length).toBe(4);
  });

  test('is refused from a listener, like apply', () => {
    const registry = new ClusterRegistry({ onListenerError: () => {} });
    let thrown: unknown;
    registry.onRefresh(() => {
      try {
        registry.repeat();
      } catch (error) {
        thrown = error;
      }
    });
    registry.apply(parseRefresh(seedExample()));
    expect(thrown).toBeInstanceOf(PdlinkError);
    expect(registry.generation).toBe(1);
  });
});

describe('applyLoads', () => {
  /** Each instance's free slots and blocks, in the layout applyLoads takes. */
  const loadsOf = (body: ExampleBody) => body.instances.flatMap((i) => [i.dynamic_info.avail_slots_num, i.dynamic_info.avail_block_num]);

  test('gives the diff, instances and view that applying the snapshot with those loads gives', () => {
    const body = exampleSnapshot(6);
    const next = structuredClone(body);
    next.instances[1]!.dynamic_info.avail_slots_num = 5;
    next.instances[4]!.dynamic_info.avail_block_num = 0;
    const byLoads = new ClusterRegistry({ now: () => 7 });
    const bySnapshot = new ClusterRegistry({ now: () => 7 });
    applyAsRouted(byLoads, body);
    applyAsRouted(bySnapshot, body);
    const heard: RegistryDiff[] = [];
    const refreshes: number[] = [];
    byLoads.onChange((d) => heard.push(d));
    byLoads.onRefresh((g) => refreshes.push(g));
    const held = byLoads.all();
    const diff = byLoads.applyLoads(new Uint32Array(loadsOf(next)));
    const expected = applyAsRouted(bySnapshot, next);
    expect(diff.generation).toBe(2);
    expect(diff.updated.map((u) => [u.before.id, u.after.id, u.before === u.after])).toEqual([
      [1, 1, true],
      [4, 4, true],
    ]);
    expect(diff.updated.map((u) => u.after.id)).toEqual(expected.updated.map((u) => u.after.id));
    expect([diff.added, diff.removed]).toEqual([[], []]);
    expect(heard).toEqual([diff]);
    expect(refreshes).toEqual([2]);
    // The same objects, taking the loads in place; the view and the wire follow.
    expect(byLoads.all()).toBe(held);
    expect(byLoads.get(1)!.availSlots).toBe(5);
    expect(byLoads.view()).toEqual(bySnapshot.view());
    expect(byLoads.get(4)!.wire).toEqual(plainInstances(next)[4] as never);
  });

  test('the same loads again change nothing but the generation', () => {
    const registry = new ClusterRegistry();
    const body = exampleSnapshot(3);
    applyAsRouted(registry, body);
    const heard: RegistryDiff[] = [];
    registry.onChange((d) => heard.push(d));
    expect(registry.applyLoads(loadsOf(body))).toEqual({ generation: 2, added: [], updated: [], removed: [] });
    expect(heard).toEqual([]);
  });

  test('refuses loads out of range or of the wrong count, a held snapshot that is not plain, and a call from a listener; nothing changes', () => {
    const registry = new ClusterRegistry({ onListenerError: () => {} });
    const body = exampleSnapshot(2);
    applyAsRouted(registry, body);
    const good = loadsOf(body);
    const refusals: [number[], RegExp][] = [
      [[201, ...good.slice(1)], /loads\[0\]: free slots of instance 0 must be in \[0, 200\]/],
      [[...good.slice(0, 3), 1025], /loads\[3\]: free blocks of instance 1 must be in \[0, 1024\]/],
      [[1.5, ...good.slice(1)], /loads\[0\]/],
      [[-1, ...good.slice(1)], /loads\[0\]/],
      [good.slice(1), /loads: expected 4 values \(2 per instance\), got 3/],
    ];
    for (const [loads, message] of refusals) {
      expect(() => registry.applyLoads(loads)).toThrow(message);
      expect(registry.generation).toBe(1);
      expect(registry.get(0)!.availSlots).toBe(200);
    }
    let thrown: unknown;
    registry.onRefresh(() => {
      try {
        registry.applyLoads(good);
      } catch (error) {
        thrown = error;
      }
    });
    registry.repeat();
    expect(thrown).toBeInstanceOf(PdlinkError);
    expect(registry.generation).toBe(2);

    const withExtras = new ClusterRegistry();
    const extra = seedWith((b) => (b.instances[0]!.note = 'kept'));
    withExtras.apply(parseRefresh(parseRefreshText(JSON.stringify(extra))));
    expect(() => withExtras.applyLoads(loadsOf(extra))).toThrow(/needs the last snapshot to be plain/);
    expect(withExtras.generation).toBe(1);
  });
});

/** Turns instance `id` into role 85 and drops it from the peers of the others. */
function makeUndefined(body: ExampleBody, id: number): void {
  for (const instance of body.instances) {
    if (instance.id === id) instance.static_info.role = 85;
    else instance.dynamic_info.peers = (instance.dynamic_info.peers as number[]).filter((p) => p !== id);
  }
}

/** The instances of a body, as plain JSON (what the view must list). */
function plainInstances(body: ExampleBody): unknown[] {
  return JSON.parse(JSON.stringify(body.instances)) as unknown[];
}
