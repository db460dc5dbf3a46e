import { describe, expect, test } from 'bun:test';
import * as v from 'valibot';
import { seedExample } from '../../test/doubles/refresh-examples.ts';
import { isValidSnapshot } from './refresh-fast.ts';
import { RefreshSchema, validateRefresh } from './refresh.ts';
import { kvEndpointPort, kvEventsIssue } from './kv-endpoint.ts';

/** The refresh's issues when instance 0 carries these fields; the fast path must agree with Valibot. */
function issuesWith(fields: Record<string, unknown>): { path: string; message: string }[] {
  const body = seedExample();
  Object.assign(body.instances[0]!, fields);
  expect(isValidSnapshot(body)).toBe(v.safeParse(RefreshSchema, body, { abortEarly: false }).success);
  const result = validateRefresh(body);
  return result.ok ? [] : result.issues;
}

describe('KV-event publisher fields of a refresh entry', () => {
  test.each([
    { kv_events_endpoint: 'tcp://10.0.0.5:5557' },
    { kv_events_endpoint: 'tcp://*:5557', kv_events_replay_endpoint: 'tcp://*:5558', kv_events_dp_size: 4 },
    { kv_events_endpoint: 'tcp://[::1]:1', kv_events_replay_endpoint: null },
    { kv_events_endpoint: 'tcp://engine-3.example:65535', kv_events_dp_size: 1 },
    { kv_events_endpoint: null, kv_events_dp_size: null },
    { kv_events_dp_size: 1024 },
  ])('usable fields are accepted: %p', (fields) => {
    expect(issuesWith(fields)).toEqual([]);
  });

  test.each([
    ['kv_events_endpoint', 'tcp://10.0.0.5'],
    ['kv_events_endpoint', 'udp://10.0.0.5:5557'],
    ['kv_events_endpoint', 'tcp://10.0.0.5:0'],
    ['kv_events_endpoint', 'tcp://10.0.0.5:65536'],
    ['kv_events_endpoint', 'tcp://[not-v6]:5557'],
    ['kv_events_endpoint', 'tcp://a:b:5557'],
    ['kv_events_endpoint', 5557],
    ['kv_events_endpoint', `tcp://${'h'.repeat(300)}:5557`],
    ['kv_events_replay_endpoint', 'tcp://h'],
    ['kv_events_replay_endpoint', true],
  ])('%s %p is refused with 400 naming the field', (field, value) => {
    const issues = issuesWith({ kv_events_endpoint: 'tcp://10.0.0.5:5557', [field]: value });
    expect(issues).toHaveLength(1);
    expect(issues[0]!.path).toBe(`instances[0].${field}`);
    expect(issues[0]!.message).toContain('must be tcp://HOST:PORT');
  });

  test.each([0, 1025, 1.5, '2', -1])('kv_events_dp_size %p is refused', (dpSize) => {
    const issues = issuesWith({ kv_events_endpoint: 'tcp://h:5557', kv_events_dp_size: dpSize });
    expect(issues.map((i) => i.path)).toEqual(['instances[0].kv_events_dp_size']);
    expect(issues[0]!.message).toContain('must be an integer in [1, 1024]');
  });

  test("ranks whose ports would pass 65535 are refused at kv_events_dp_size, the endpoint's or the replay's", () => {
    let issues = issuesWith({ kv_events_endpoint: 'tcp://h:65535', kv_events_dp_size: 2 });
    expect(issues.map((i) => [i.path, i.message])).toEqual([
      ['instances[0].kv_events_dp_size', 'ranks 0 to 1 publish on ports up to 65536, past 65535'],
    ]);
    issues = issuesWith({ kv_events_endpoint: 'tcp://h:5557', kv_events_replay_endpoint: 'tcp://h:65535', kv_events_dp_size: 2 });
    expect(issues.map((i) => i.path)).toEqual(['instances[0].kv_events_dp_size']);
    expect(issuesWith({ kv_events_endpoint: 'tcp://h:65534', kv_events_dp_size: 2 })).toEqual([]);
  });

  test('a bad endpoint is listed with the body’s other issues', () => {
    const issues = issuesWith({ kv_events_endpoint: 'tcp://h', port: '1' });
    expect(issues.map((i) => i.path).sort()).toEqual(['instances[0].kv_events_endpoint', 'instances[0].port']);
  });
});

describe('kvEndpointPort and kvEventsIssue', () => {
  test('the port of a usable endpoint, -1 for anything else', () => {
    expect(kvEndpointPort('tcp://10.0.0.5:5557')).toBe(5557);
    expect(kvEndpointPort('tcp://[::1]:1')).toBe(1);
    expect([kvEndpointPort('tcp://h:0'), kvEndpointPort(undefined), kvEndpointPort('tcp://[1.2.3.4]:5')]).toEqual([-1, -1, -1]);
  });

  test('absent or null fields have nothing wrong', () => {
    expect(kvEventsIssue({})).toBeUndefined();
    expect(kvEventsIssue({ kv_events_endpoint: null, kv_events_replay_endpoint: null, kv_events_dp_size: null })).toBeUndefined();
  });
});
