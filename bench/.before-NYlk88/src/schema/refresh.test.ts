import { describe, expect, test } from 'bun:test';
import * as v from 'valibot';
import { type FieldIssue, PdlinkError } from '../core/errors.ts';
import { parseJsonExact } from '../core/exact-json.ts';
import { isValidSnapshot } from './refresh-fast.ts';
import { exampleSnapshot, type ExampleBody, seedExample } from '../../test/doubles/refresh-examples.ts';
import {
  MAX_INSTANCES,
  MAX_REPORTED_ISSUES,
  parseRefresh,
  RefreshSchema,
  UINT32_MAX,
  UNSAFE_INTEGER_MESSAGE,
  validateRefresh,
} from './refresh.ts';

/** Issues of a body; also asserts that the fast path and Valibot agree on it. */
function issuesOf(body: unknown): FieldIssue[] {
  const slow = v.safeParse(RefreshSchema, body, { abortEarly: false });
  expect(isValidSnapshot(body)).toBe(slow.success);
  const result = validateRefresh(body);
  return result.ok ? [] : result.issues;
}

/** The seed example with one edit applied. */
function seedWith(edit: (body: ExampleBody) => void): ExampleBody {
  const body = seedExample();
  edit(body);
  return body;
}

function expectOneIssue(body: unknown, path: string, message: string | RegExp): void {
  const issues = issuesOf(body);
  expect(issues).toHaveLength(1);
  expect(issues[0]!.path).toBe(path);
  if (typeof message === 'string') expect(issues[0]!.message).toContain(message);
  else expect(issues[0]!.message).toMatch(message);
}

const P = 0; // index of the seed's prefill instance
const D = 1; // index of the seed's decode instance

describe('the source document example', () => {
  test('is valid and keeps its shape', () => {
    expect(issuesOf(seedExample())).toEqual([]);
    expect(parseRefresh(seedExample()) as unknown).toEqual(seedExample());
  });
});

describe('port and metric_port: decimal strings in ["1024", "65535"]', () => {
  test.each(['1024', '1025', '65535'])('%p is accepted', (port) => {
    expect(issuesOf(seedWith((b) => (b.instances[P]!.port = port)))).toEqual([]);
    expect(issuesOf(seedWith((b) => (b.instances[D]!.metric_port = port)))).toEqual([]);
  });
  test.each(['1023', '65536', ' 1025', '1025 ', '1025.0', '0x401', '+1025', '01025', '', '1e3', '99999999'])('%p is rejected', (port) => {
    expectOneIssue(
      seedWith((b) => (b.instances[P]!.port = port)),
      'instances[0].port',
      'must be a decimal integer string in ["1024", "65535"]',
    );
    expectOneIssue(
      seedWith((b) => (b.instances[D]!.metric_port = port)),
      'instances[1].metric_port',
      'decimal integer string',
    );
  });
  test.each([[1025], [null], [true], [['1025']]])('%p (not a string) is rejected', (port) => {
    expectOneIssue(
      seedWith((b) => (b.instances[P]!.port = port)),
      'instances[0].port',
      'expected a string such as "1025"',
    );
  });
});

describe('ip: IPv4 or IPv6 text', () => {
  test.each(['0.0.0.0', '127.0.0.1', '255.255.255.255', '::1', 'fe80::1', '2001:db8::8a2e:370:7334', '::ffff:10.0.0.1'])(
    '%p is accepted',
    (ip) => {
      expect(issuesOf(seedWith((b) => (b.instances[P]!.ip = ip)))).toEqual([]);
    },
  );
  test.each(['256.0.0.1', '10.0.0', '010.0.0.1', 'node-1.example', '', ' 10.0.0.1', '1::2::3', 10])('%p is rejected', (ip) => {
    expectOneIssue(
      seedWith((b) => (b.instances[P]!.ip = ip)),
      'instances[0].ip',
      'expected an IPv4 or IPv6 address',
    );
  });
});

describe('model_name: a non-empty string', () => {
  test('one character is enough', () => {
    expect(issuesOf(seedWith((b) => (b.instances[P]!.model_name = 'm')))).toEqual([]);
  });
  test.each(['', 7, null])('%p is rejected', (name) => {
    expectOneIssue(
      seedWith((b) => (b.instances[P]!.model_name = name)),
      'instances[0].model_name',
      'expected a non-empty string',
    );
  });
});

describe('uint64 ids', () => {
  test('0 and 2^53-1 are accepted', () => {
    const body = seedWith((b) => {
      b.ids = [Number.MAX_SAFE_INTEGER, 1];
      b.instances[P]!.id = Number.MAX_SAFE_INTEGER;
      b.instances[D]!.dynamic_info.peers = [Number.MAX_SAFE_INTEGER];
      b.instances[D]!.static_info.group_id = Number.MAX_SAFE_INTEGER;
    });
    expect(issuesOf(body)).toEqual([]);
  });
  test.each([
    [-1, 'must be an unsigned integer, got -1'],
    [1.5, 'expected an integer, got number 1.5'],
    ['0', 'expected an integer, got string "0"'],
    [true, 'expected an integer, got boolean true'],
    [null, 'expected an integer, got null'],
    [2 ** 53, UNSAFE_INTEGER_MESSAGE],
  ])('group_id %p is rejected', (value, message) => {
    expectOneIssue(
      seedWith((b) => (b.instances[P]!.static_info.group_id = value)),
      'instances[0].static_info.group_id',
      message,
    );
  });
  test('an integer literal beyond 2^53-1 is rejected where it stands, never rounded', () => {
    const text = JSON.stringify(seedExample())
      .replace('"ids":[0,1]', '"ids":[9007199254740993,1]')
      .replace('"id":0', '"id":9007199254740993');
    const issues = issuesOf(parseJsonExact(text));
    expect(issues.filter((i) => i.message === UNSAFE_INTEGER_MESSAGE).map((i) => i.path)).toEqual(['ids[0]', 'instances[0].id']);
  });
  test('a negative unsafe literal is rejected too', () => {
    const text = JSON.stringify(seedExample()).replace('"group_id":0', '"group_id":-9007199254740993');
    expectOneIssue(parseJsonExact(text), 'instances[0].static_info.group_id', UNSAFE_INTEGER_MESSAGE);
  });
});

describe('static_info ranges', () => {
  const staticOf = (index: number, edit: (s: Record<string, unknown>) => void) => seedWith((b) => edit(b.instances[index]!.static_info));
  const path = (field: string) => `instances[0].static_info.${field}`;

  test('max_seq_len > 0 and ≤ uint32', () => {
    expectOneIssue(
      staticOf(P, (s) => (s.max_seq_len = 0)),
      path('max_seq_len'),
      'must be in [1, 4294967295], got 0',
    );
    expect(issuesOf(staticOf(P, (s) => (s.max_seq_len = UINT32_MAX)))).toEqual([]);
    expectOneIssue(
      staticOf(P, (s) => (s.max_seq_len = UINT32_MAX + 1)),
      path('max_seq_len'),
      'got 4294967296',
    );
  });
  test('max_output_len in [1, max_seq_len - 1]', () => {
    expectOneIssue(
      staticOf(P, (s) => (s.max_output_len = 0)),
      path('max_output_len'),
      'got 0',
    );
    expect(issuesOf(staticOf(P, (s) => (s.max_output_len = 1)))).toEqual([]);
    expect(issuesOf(staticOf(P, (s) => (s.max_output_len = 2047)))).toEqual([]);
    expectOneIssue(
      staticOf(P, (s) => (s.max_output_len = 2048)),
      path('max_output_len'),
      'must be in [1, max_seq_len - 1] = [1, 2047], got 2048',
    );
  });
  test('max_seq_len = 1 leaves no valid max_output_len', () => {
    expectOneIssue(
      staticOf(P, (s) => ((s.max_seq_len = 1), (s.max_output_len = 1))),
      path('max_output_len'),
      '[1, 0]',
    );
  });
  test('total_slots_num in [1, 5000]', () => {
    expectOneIssue(
      staticOf(P, (s) => (s.total_slots_num = 0)),
      path('total_slots_num'),
      'must be in [1, 5000], got 0',
    );
    const one = seedWith((b) => ((b.instances[P]!.static_info.total_slots_num = 1), (b.instances[P]!.dynamic_info.avail_slots_num = 1)));
    expect(issuesOf(one)).toEqual([]);
    expect(issuesOf(staticOf(P, (s) => (s.total_slots_num = 5000)))).toEqual([]);
    expectOneIssue(
      staticOf(P, (s) => (s.total_slots_num = 5001)),
      path('total_slots_num'),
      'got 5001',
    );
  });
  test('total_block_num > 0 and ≤ uint32', () => {
    expectOneIssue(
      staticOf(P, (s) => (s.total_block_num = 0)),
      path('total_block_num'),
      'got 0',
    );
    const one = seedWith((b) => ((b.instances[P]!.static_info.total_block_num = 1), (b.instances[P]!.dynamic_info.avail_block_num = 1)));
    expect(issuesOf(one)).toEqual([]);
    expect(issuesOf(staticOf(P, (s) => (s.total_block_num = UINT32_MAX)))).toEqual([]);
    expectOneIssue(
      staticOf(P, (s) => (s.total_block_num = UINT32_MAX + 1)),
      path('total_block_num'),
      'got 4294967296',
    );
  });
  test('block_size in [1, 128]', () => {
    expectOneIssue(
      staticOf(P, (s) => (s.block_size = 0)),
      path('block_size'),
      'must be in [1, 128], got 0',
    );
    expect(issuesOf(staticOf(P, (s) => (s.block_size = 1)))).toEqual([]);
    expect(issuesOf(staticOf(P, (s) => (s.block_size = 128)))).toEqual([]);
    expectOneIssue(
      staticOf(P, (s) => (s.block_size = 129)),
      path('block_size'),
      'got 129',
    );
  });
  test.each([1, 4, 0, '2', null])('label %p is rejected', (label) => {
    expectOneIssue(
      staticOf(P, (s) => (s.label = label)),
      path('label'),
      'must be one of 2 (prefill), 3 (decode)',
    );
  });
  test('label 2 and 3 are accepted, not cross-checked against role', () => {
    expect(issuesOf(staticOf(P, (s) => (s.label = 3)))).toEqual([]);
    expect(issuesOf(staticOf(D, (s) => (s.label = 2)))).toEqual([]);
  });
  test.each([0, 79, 81, 67, 69, 84, 86, '80'])('role %p is rejected', (role) => {
    expectOneIssue(
      staticOf(D, (s) => (s.role = role)),
      'instances[1].static_info.role',
      'must be one of 80 (prefill), 68 (decode), 85 (undefined)',
    );
  });
  test('role 85 is accepted', () => {
    expect(issuesOf(staticOf(D, (s) => (s.role = 85)))).toEqual([]);
  });
});

describe('dynamic_info', () => {
  const dynamicOf = (edit: (d: Record<string, unknown>) => void) => seedWith((b) => edit(b.instances[P]!.dynamic_info));
  test('avail_slots_num in [0, total_slots_num]', () => {
    expect(issuesOf(dynamicOf((d) => (d.avail_slots_num = 0)))).toEqual([]);
    expect(issuesOf(dynamicOf((d) => (d.avail_slots_num = 200)))).toEqual([]);
    expectOneIssue(
      dynamicOf((d) => (d.avail_slots_num = 201)),
      'instances[0].dynamic_info.avail_slots_num',
      'must be in [0, total_slots_num] = [0, 200], got 201',
    );
    expectOneIssue(
      dynamicOf((d) => (d.avail_slots_num = -1)),
      'instances[0].dynamic_info.avail_slots_num',
      'got -1',
    );
  });
  test('avail_block_num in [0, total_block_num]', () => {
    expect(issuesOf(dynamicOf((d) => (d.avail_block_num = 0)))).toEqual([]);
    expect(issuesOf(dynamicOf((d) => (d.avail_block_num = 1024)))).toEqual([]);
    expectOneIssue(
      dynamicOf((d) => (d.avail_block_num = 1025)),
      'instances[0].dynamic_info.avail_block_num',
      '[0, total_block_num] = [0, 1024], got 1025',
    );
  });
  test('avail is not compared with an invalid total: only the total is reported', () => {
    const body = seedWith((b) => ((b.instances[P]!.static_info.total_slots_num = 0), (b.instances[P]!.dynamic_info.avail_slots_num = 100)));
    expectOneIssue(body, 'instances[0].static_info.total_slots_num', 'got 0');
  });
});

describe('peers', () => {
  const peersPath = 'instances[1].dynamic_info.peers';
  test('a decode instance without peers is rejected', () => {
    expectOneIssue(
      seedWith((b) => delete b.instances[D]!.dynamic_info.peers),
      peersPath,
      'required for a decode instance (role 68)',
    );
  });
  test('a decode instance with an empty peers list is accepted (nothing linked yet)', () => {
    expect(issuesOf(seedWith((b) => (b.instances[D]!.dynamic_info.peers = [])))).toEqual([]);
  });
  test('a peer that is not in the snapshot is rejected', () => {
    expectOneIssue(
      seedWith((b) => (b.instances[D]!.dynamic_info.peers = [0, 7])),
      `${peersPath}[1]`,
      'peer 7 is not an instance of this snapshot',
    );
  });
  test("a decode instance's peer must be prefill", () => {
    expectOneIssue(
      seedWith((b) => (b.instances[D]!.dynamic_info.peers = [1])),
      `${peersPath}[0]`,
      'peer 1 has role 68 (decode); the peers of a decode instance must be prefill instances (role 80)',
    );
    const toUndefined = seedWith((b) => (b.instances[P]!.static_info.role = 85));
    expectOneIssue(
      toUndefined,
      `${peersPath}[0]`,
      'peer 0 has role 85 (undefined); the peers of a decode instance must be prefill instances (role 80)',
    );
  });
  test('a prefill instance may list decode peers, only decode ones', () => {
    expect(issuesOf(seedWith((b) => (b.instances[P]!.dynamic_info.peers = [1])))).toEqual([]);
    expectOneIssue(
      seedWith((b) => (b.instances[P]!.dynamic_info.peers = [0])),
      'instances[0].dynamic_info.peers[0]',
      'peer 0 has role 80 (prefill); the peers of a prefill instance must be decode instances (role 68)',
    );
  });
  test('an undefined-role instance may list any existing instance', () => {
    const body = seedWith((b) => ((b.instances[D]!.static_info.role = 85), (b.instances[D]!.dynamic_info.peers = [0, 1])));
    expect(issuesOf(body)).toEqual([]);
    const unknown = seedWith((b) => ((b.instances[D]!.static_info.role = 85), (b.instances[D]!.dynamic_info.peers = [5])));
    expectOneIssue(unknown, `${peersPath}[0]`, 'not an instance of this snapshot');
  });
  test('a duplicate in a peers list names the duplicate', () => {
    expectOneIssue(
      seedWith((b) => (b.instances[D]!.dynamic_info.peers = [0, 0])),
      `${peersPath}[1]`,
      'duplicate peer id 0 (first at peers[0])',
    );
  });
  test('long peer lists are checked for duplicates too', () => {
    // The 65th instance is alone in its group, so nobody lists it as a peer.
    const body = exampleSnapshot(65);
    body.instances[64]!.static_info.role = 85;
    body.instances[64]!.dynamic_info.peers = [...Array(40).keys(), 3];
    expectOneIssue(body, 'instances[64].dynamic_info.peers[40]', 'duplicate peer id 3 (first at peers[3])');
  });
  test.each([[[-1]], [['0']], [[0.5]]])('peer %p is rejected as an id', (peers) => {
    expectOneIssue(
      seedWith((b) => (b.instances[D]!.dynamic_info.peers = peers)),
      `${peersPath}[0]`,
      /integer/,
    );
  });
  test('peers that are not an array are rejected', () => {
    expectOneIssue(
      seedWith((b) => (b.instances[D]!.dynamic_info.peers = 0)),
      peersPath,
      'expected an array, got number 0',
    );
  });
});

describe('ids and instances', () => {
  test('an id without an instance, and an instance not listed, are both named', () => {
    const body = seedWith((b) => (b.ids = [0, 5]));
    expect(issuesOf(body)).toEqual([
      { path: 'instances[1].id', message: 'id 1 is not listed in ids' },
      { path: 'ids[1]', message: 'id 5 has no entry in instances' },
    ]);
  });
  test('a duplicate in ids names the duplicate', () => {
    const issues = issuesOf(seedWith((b) => (b.ids = [0, 1, 0])));
    expect(issues).toEqual([{ path: 'ids[2]', message: 'duplicate id 0 (first at ids[0])' }]);
  });
  test('a duplicate instance id names the duplicate', () => {
    const body = seedWith((b) => b.instances.push({ ...b.instances[P]! }));
    expect(issuesOf(body)).toEqual([{ path: 'instances[2].id', message: 'duplicate instance id 0 (first at instances[0])' }]);
  });
  test(`${MAX_INSTANCES} instances are accepted, ${MAX_INSTANCES + 1} are not`, () => {
    expect(issuesOf(exampleSnapshot(MAX_INSTANCES))).toEqual([]);
    expect(issuesOf(exampleSnapshot(MAX_INSTANCES + 1))).toEqual([
      { path: 'ids', message: `at most ${MAX_INSTANCES} ids, got ${MAX_INSTANCES + 1}` },
      { path: 'instances', message: `at most ${MAX_INSTANCES} instances, got ${MAX_INSTANCES + 1}` },
    ]);
  });
  test('an empty snapshot is valid: the cluster has no instances', () => {
    expect(issuesOf({ ids: [], instances: [] })).toEqual([]);
  });
  test('an unreadable id does not cause follow-up reference issues', () => {
    const body = seedWith((b) => (b.instances[P]!.id = 'zero'));
    expect(issuesOf(body)).toEqual([{ path: 'instances[0].id', message: 'expected an integer, got string "zero"' }]);
  });
});

describe('shape errors', () => {
  test.each([
    [null, 'null'],
    [[], 'an array'],
    ['refresh', 'string "refresh"'],
    [42, 'number 42'],
  ])('a body of %p is rejected at the root', (body, got) => {
    expect(issuesOf(body)).toEqual([{ path: '', message: `expected an object, got ${got}` }]);
  });
  test('missing required fields are each named', () => {
    expect(issuesOf({})).toEqual([
      { path: 'ids', message: 'is required' },
      { path: 'instances', message: 'is required' },
    ]);
    const body = seedWith((b) => {
      delete b.instances[P]!.static_info.block_size;
      delete b.instances[D]!.dynamic_info;
    });
    expect(issuesOf(body)).toEqual([
      { path: 'instances[0].static_info.block_size', message: 'is required' },
      { path: 'instances[1].dynamic_info', message: 'is required' },
    ]);
  });
  test('objects of the wrong type are named', () => {
    const body = seedWith((b) => {
      b.instances[P]!.static_info = [];
      b.instances[D] = null as never;
    });
    expect(issuesOf(body)).toEqual([
      { path: 'instances[0].static_info', message: 'expected an object, got an array' },
      { path: 'instances[1]', message: 'expected an object, got null' },
    ]);
  });
});

describe('several problems at once', () => {
  test('every issue is listed, each at its path', () => {
    const body = seedWith((b) => {
      b.instances[P]!.port = '1023';
      b.instances[P]!.static_info.block_size = 129;
      b.instances[D]!.static_info.max_output_len = 2048;
      b.instances[D]!.dynamic_info.avail_slots_num = 201;
      b.instances[D]!.dynamic_info.peers = [0, 9];
      b.ids = [0, 1, 1];
    });
    expect(issuesOf(body).map((i) => i.path)).toEqual([
      'instances[0].port',
      'instances[0].static_info.block_size',
      'instances[1].static_info.max_output_len',
      'instances[1].dynamic_info.avail_slots_num',
      'ids[2]',
      'instances[1].dynamic_info.peers[1]',
    ]);
  });
  test('an oversized array is refused by its length before any item is checked', () => {
    const started = performance.now();
    expect(issuesOf({ ids: Array(2_000_000).fill('x'), instances: [] })).toEqual([
      { path: 'ids', message: 'at most 4096 ids, got 2000000' },
    ]);
    const peers = seedWith((b) => (b.instances[1]!.dynamic_info.peers = Array(MAX_INSTANCES + 1).fill(0)));
    expect(issuesOf(peers)).toEqual([{ path: 'instances[1].dynamic_info.peers', message: 'at most 4096 peers, got 4097' }]);
    expect(performance.now() - started).toBeLessThan(5000); // generous: the point is no per-item work
  });
  test('a body of thousands of wrong items lists the first ones and counts the rest, without collecting them all', () => {
    const body = exampleSnapshot(64);
    for (const instance of body.instances) instance.dynamic_info.peers = Array(MAX_INSTANCES).fill('x');
    const issues = issuesOf(body);
    expect(issues).toHaveLength(MAX_REPORTED_ISSUES + 1);
    expect(issues[0]).toEqual({ path: 'instances[0].dynamic_info.peers[0]', message: 'expected an integer, got string "x"' });
    expect(issues.at(-1)).toEqual({ path: '', message: `${64 * MAX_INSTANCES - MAX_REPORTED_ISSUES} more issues not listed` });
  });
  test('the issue budget of one validation does not leak into the next', () => {
    const many = seedWith((b) => (b.instances[1]!.dynamic_info.peers = Array(500).fill(true)));
    expect(issuesOf(many)).toHaveLength(MAX_REPORTED_ISSUES + 1);
    expect(issuesOf(seedWith((b) => (b.instances[0]!.port = '1')))).toEqual([
      { path: 'instances[0].port', message: expect.stringContaining('decimal integer string') },
    ]);
    // Direct Valibot use is unbudgeted: every issue is there.
    expect(v.safeParse(RefreshSchema, many, { abortEarly: false }).issues).toHaveLength(500);
  });
  test(`at most ${MAX_REPORTED_ISSUES} issues are listed, the rest counted`, () => {
    const body = seedWith((b) => (b.instances[D]!.dynamic_info.peers = Array(250).fill(0)));
    const issues = issuesOf(body);
    expect(issues).toHaveLength(MAX_REPORTED_ISSUES + 1);
    expect(issues.at(-1)).toEqual({ path: '', message: `${249 - MAX_REPORTED_ISSUES} more issues not listed` });
  });
});

describe('unknown fields', () => {
  test('are accepted and kept at every level', () => {
    const body = seedWith((b) => {
      b.controller = { epoch: 3 };
      b.instances[P]!.virtual_id = 17;
      b.instances[P]!.static_info.p_percentage = 50;
      b.instances[D]!.dynamic_info.prefix_hash = ['a', 'b'];
    });
    const snapshot = parseRefresh(body);
    expect(snapshot).toEqual(body as never);
    expect((snapshot as Record<string, unknown>).controller).toEqual({ epoch: 3 });
  });
  test('are kept when a body takes the Valibot path too', () => {
    const body = seedWith((b) => (b.instances[P]!.extra = 'kept'));
    const result = v.safeParse(RefreshSchema, body, { abortEarly: false });
    expect(result.success).toBe(true);
    expect((result.output as ExampleBody).instances[0]!.extra).toBe('kept');
  });
});

describe('parseRefresh', () => {
  test('throws the 400 invalid_body error listing every issue', () => {
    const body = seedWith((b) => ((b.instances[P]!.port = '1023'), (b.instances[D]!.static_info.block_size = 0)));
    let thrown: unknown;
    try {
      parseRefresh(body);
    } catch (error) {
      thrown = error;
    }
    expect(thrown).toBeInstanceOf(PdlinkError);
    const error = thrown as PdlinkError;
    expect(error.code).toBe('invalid_body');
    expect(error.status).toBe(400);
    expect(error.issues.map((i) => i.path)).toEqual(['instances[0].port', 'instances[1].static_info.block_size']);
  });
});
