import { describe, expect, test } from 'bun:test';
import fc from 'fast-check';
import * as v from 'valibot';
import { UnsafeInteger } from '../core/exact-json.ts';
import { checkSnapshot, isValidSnapshot, SNAPSHOT_INVALID, SNAPSHOT_PLAIN, SNAPSHOT_VALID } from './refresh-fast.ts';
import { exampleSnapshot, seedExample } from '../../test/doubles/refresh-examples.ts';
import { RefreshSchema } from './refresh.ts';

const UNSAFE = new UnsafeInteger('9007199254740993');
const MAX = Number.MAX_SAFE_INTEGER;
const UINT32 = 4294967295;

/** Each field with values at and around its boundaries, and values of wrong types. */
const FIELDS: readonly { path: readonly string[]; values: readonly unknown[] }[] = [
  { path: ['id'], values: [-1, 0, 1, 2, 40, MAX, 2 ** 53, 0.5, '0', UNSAFE] },
  { path: ['ip'], values: ['10.0.0.1', '::1', '999.0.0.1', '10.0.0', '', 1] },
  { path: ['port'], values: ['1023', '1024', '65535', '65536', ' 1025', '01025', '0x401', '1025.0', 1025] },
  { path: ['metric_port'], values: ['1023', '1024', '65535', '65536', 1026] },
  { path: ['model_name'], values: ['', 'm', 0] },
  { path: ['static_info'], values: [null, [], {}] },
  { path: ['static_info', 'group_id'], values: [-1, 0, MAX, 2 ** 53, 0.5, UNSAFE] },
  { path: ['static_info', 'max_seq_len'], values: [0, 1, 2, 1024, 1025, 4096, UINT32, UINT32 + 1] },
  { path: ['static_info', 'max_output_len'], values: [0, 1, 1023, 1024, 4095, 4096, UINT32] },
  { path: ['static_info', 'total_slots_num'], values: [0, 1, 199, 200, 201, 5000, 5001] },
  { path: ['static_info', 'total_block_num'], values: [0, 1, 1023, 1024, 1025, UINT32, UINT32 + 1] },
  { path: ['static_info', 'block_size'], values: [0, 1, 127, 128, 129] },
  { path: ['static_info', 'label'], values: [1, 2, 3, 4, '2'] },
  { path: ['static_info', 'role'], values: [68, 80, 85, 79, 81, '80'] },
  { path: ['dynamic_info'], values: [null, [], {}] },
  { path: ['dynamic_info', 'avail_slots_num'], values: [-1, 0, 1, 199, 200, 201, 5000] },
  { path: ['dynamic_info', 'avail_block_num'], values: [-1, 0, 1, 1023, 1024, 1025] },
  { path: ['dynamic_info', 'peers'], values: [[], [0], [0, 0], [1], [0, 1], [-1], 0, null] },
  {
    path: ['kv_events_endpoint'],
    values: ['tcp://10.0.0.5:5557', 'tcp://*:65535', 'tcp://[::1]:1', 'tcp://h:0', 'tcp://h', 'udp://h:1', 5557],
  },
  { path: ['kv_events_replay_endpoint'], values: ['tcp://h:5558', 'tcp://h:65535', 'tcp://[x]:1', ''] },
  { path: ['kv_events_dp_size'], values: [0, 1, 2, 1024, 1025, 1.5, '2'] },
];
/** Wrong for every field. */
const ANYWHERE: readonly unknown[] = [null, true, undefined, '1', Number.NaN];

type Mutation =
  | { kind: 'set'; instance: number; field: number; value: number }
  | { kind: 'delete'; instance: number; field: number }
  | { kind: 'ids'; op: 'push' | 'pop' | 'dup' | 'swap'; value: number }
  | { kind: 'instances'; op: 'dup' | 'pop'; value: number }
  | { kind: 'peer'; instance: number; op: 'add' | 'dup' | 'clear'; value: number };

const mutation: fc.Arbitrary<Mutation> = fc.oneof(
  fc.record({ kind: fc.constant('set' as const), instance: fc.nat(40), field: fc.nat(FIELDS.length - 1), value: fc.nat(99) }),
  fc.record({ kind: fc.constant('delete' as const), instance: fc.nat(40), field: fc.nat(FIELDS.length - 1) }),
  fc.record({ kind: fc.constant('ids' as const), op: fc.constantFrom('push', 'pop', 'dup', 'swap'), value: fc.nat(40) }),
  fc.record({ kind: fc.constant('instances' as const), op: fc.constantFrom('dup', 'pop'), value: fc.nat(40) }),
  fc.record({ kind: fc.constant('peer' as const), instance: fc.nat(40), op: fc.constantFrom('add', 'dup', 'clear'), value: fc.nat(40) }),
);

function mutate(body: ReturnType<typeof seedExample>, m: Mutation): void {
  const n = body.instances.length;
  if (m.kind === 'ids') {
    if (m.op === 'push') body.ids.push(m.value);
    else if (m.op === 'pop') body.ids.pop();
    else if (m.op === 'dup' && body.ids.length > 0) body.ids.push(body.ids[m.value % body.ids.length]);
    else if (m.op === 'swap' && body.ids.length > 0) body.ids[m.value % body.ids.length] = m.value;
    return;
  }
  if (n === 0) return;
  if (m.kind === 'instances') {
    if (m.op === 'pop') body.instances.pop();
    else body.instances.push(structuredClone(body.instances[m.value % n]!));
    return;
  }
  const instance = body.instances[m.instance % n] as Record<string, any>;
  if (m.kind === 'peer') {
    const d = instance.dynamic_info;
    if (typeof d !== 'object' || d === null) return;
    if (m.op === 'clear') delete d.peers;
    else if (!Array.isArray(d.peers)) d.peers = [m.value];
    else d.peers.push(m.op === 'dup' && d.peers.length > 0 ? d.peers[0] : m.value);
    return;
  }
  const { path, values } = FIELDS[m.field]!;
  let target: any = instance;
  for (const key of path.slice(0, -1)) {
    target = target[key];
    if (typeof target !== 'object' || target === null) return;
  }
  const key = path.at(-1)!;
  if (m.kind === 'delete') delete target[key];
  else target[key] = fresh(m.value % 10 === 9 ? ANYWHERE[m.value % ANYWHERE.length] : values[m.value % values.length]);
}

/** A copy of arrays and plain objects, so one run's edits never leak into the pools. */
function fresh(value: unknown): unknown {
  if (Array.isArray(value)) return [...value];
  return value !== null && typeof value === 'object' && !(value instanceof UnsafeInteger) ? {} : value;
}

describe('isValidSnapshot', () => {
  test('accepts exactly what the Valibot schema accepts', () => {
    fc.assert(
      fc.property(fc.nat(40), fc.boolean(), fc.array(mutation, { maxLength: 4 }), (size, seed, mutations) => {
        const body = seed ? seedExample() : exampleSnapshot(size);
        for (const m of mutations) mutate(body, m);
        const expected = v.safeParse(RefreshSchema, body, { abortEarly: false }).success;
        expect(isValidSnapshot(body)).toBe(expected);
      }),
      { numRuns: 5000 },
    );
  });

  test('accepts generated clusters of every size up to a few groups', () => {
    for (let n = 0; n <= 50; n++) expect(isValidSnapshot(exampleSnapshot(n))).toBe(true);
  });

  test.each([[null], [undefined], [[]], ['{}'], [{ ids: [], instances: {} }]])('refuses %p', (body) => {
    expect(isValidSnapshot(body)).toBe(false);
  });
});

describe('isValidSnapshot with ids of any size', () => {
  /** The seed with its two ids replaced (peers follow), checked by both the fast check and Valibot. */
  function withIds(p: number, d: number, edit: (body: ReturnType<typeof seedExample>) => void = () => {}) {
    const body = seedExample();
    body.ids = [p, d];
    body.instances[0]!.id = p;
    body.instances[1]!.id = d;
    body.instances[1]!.dynamic_info.peers = [p];
    edit(body);
    const fast = isValidSnapshot(body);
    expect(fast).toBe(v.safeParse(RefreshSchema, body).success);
    return fast;
  }

  test('small ids, large ids and a mix of both are accepted alike', () => {
    expect(withIds(0, 1)).toBe(true);
    expect(withIds(2 ** 40, 2 ** 40 + 1)).toBe(true);
    expect(withIds(0, MAX)).toBe(true);
    expect(withIds(16384, 16385)).toBe(true);
  });

  test('duplicates, unknown peers and unlisted ids are refused at any size', () => {
    for (const [p, d] of [
      [3, 4],
      [2 ** 40, 2 ** 40 + 1],
    ] as const) {
      expect(withIds(p, d, (b) => (b.instances[1]!.id = p))).toBe(false);
      expect(withIds(p, d, (b) => (b.ids = [p, p]))).toBe(false);
      expect(withIds(p, d, (b) => (b.instances[1]!.dynamic_info.peers = [d + 100]))).toBe(false);
      expect(withIds(p, d, (b) => (b.instances[1]!.dynamic_info.peers = [d]))).toBe(false);
      expect(withIds(p, d, (b) => (b.ids = [p, d + 1]))).toBe(false);
    }
  });

  test('an earlier check leaves nothing behind: ids, roles and listings of the last snapshot do not count for the next', () => {
    // Each check below reuses the index the one before filled, with ids in the same dense range.
    expect(withIds(5, 6)).toBe(true);
    // 5 was a prefill instance just now; here no instance has id 5.
    expect(withIds(7, 6, (b) => (b.instances[1]!.dynamic_info.peers = [5]))).toBe(false);
    // 6 was listed just now; here it is listed once and is a decode instance again: valid.
    expect(withIds(7, 6)).toBe(true);
    // Roles swap between two checks: the decode instance's peer must be a prefill one now.
    expect(withIds(6, 7)).toBe(true);
    expect(withIds(6, 7, (b) => (b.ids = [6, 5]))).toBe(false);
  });
});

describe('checkSnapshot', () => {
  const reorder = <T extends object>(o: T, first: string): T => {
    const { [first]: value, ...rest } = o as Record<string, unknown>;
    return { ...rest, [first]: value } as T;
  };

  test('a snapshot whose every object has the schema keys in order is plain; without asking for keys, valid', () => {
    expect(checkSnapshot(seedExample(), true)).toBe(SNAPSHOT_PLAIN);
    expect(checkSnapshot(seedExample(), false)).toBe(SNAPSHOT_VALID);
    // peers is optional: a prefill instance without it is still plain.
    const body = seedExample();
    delete (body.instances[0]!.dynamic_info as { peers?: number[] }).peers;
    expect(checkSnapshot(body, true)).toBe(SNAPSHOT_PLAIN);
  });

  test('keys out of order or beyond the schema, at any level and in any instance, make a valid snapshot not plain', () => {
    const edits: ((b: ReturnType<typeof exampleSnapshot>) => void)[] = [
      (b) => Object.assign(b, { extra: 1 }),
      (b) => (b.instances[b.instances.length - 1] = reorder(b.instances[b.instances.length - 1]!, 'id')),
      (b) => Object.assign(b.instances[3]!, { note: 'x' }),
      (b) => (b.instances[2]!.static_info = reorder(b.instances[2]!.static_info, 'group_id')),
      (b) => Object.assign(b.instances[1]!.static_info, { extra: [] }),
      (b) => (b.instances[4]!.dynamic_info = reorder(b.instances[4]!.dynamic_info, 'avail_slots_num')),
      (b) => Object.assign(b.instances[5]!.dynamic_info, { extra: null }),
    ];
    for (const edit of edits) {
      const body = exampleSnapshot(8);
      expect(checkSnapshot(body, true)).toBe(SNAPSHOT_PLAIN);
      edit(body);
      expect(checkSnapshot(body, true)).toBe(SNAPSHOT_VALID);
    }
    // The snapshot's own keys in another order.
    expect(checkSnapshot(reorder(exampleSnapshot(2), 'ids'), true)).toBe(SNAPSHOT_VALID);
  });

  test('an invalid snapshot is invalid whatever its keys; the verdict agrees with isValidSnapshot on generated bodies', () => {
    const body = exampleSnapshot(4);
    body.instances[3]!.port = '80';
    expect(checkSnapshot(body, true)).toBe(SNAPSHOT_INVALID);
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 40 }), fc.integer({ min: 0, max: 200 }), (n, slots) => {
        const generated = exampleSnapshot(n);
        if (n > 0) generated.instances[n - 1]!.dynamic_info.avail_slots_num = slots;
        const valid = isValidSnapshot(generated);
        expect(checkSnapshot(generated, true) !== SNAPSHOT_INVALID).toBe(valid);
        expect(checkSnapshot(generated, false) !== SNAPSHOT_INVALID).toBe(valid);
      }),
    );
  });
});
