import { describe, expect, test } from 'bun:test';
import * as v from 'valibot';
import { UnsafeInteger } from '../core/exact-json.ts';
import { toFieldIssues } from './issues.ts';
import { LinkRequestSchema, UnlinkRequestSchema } from './links.ts';

const cluster = { remote_cluster_id: 7, remote_ip_info: '127.0.0.2:26000' };

function issues(schema: v.GenericSchema, input: unknown): string[] {
  const result = v.safeParse(schema, input, { abortEarly: false });
  return result.success ? [] : toFieldIssues(result.issues).map((i) => i.path);
}

describe('LinkRequestSchema', () => {
  test('defaults the timeout to 3000 ms and parses addresses', () => {
    const out = v.parse(LinkRequestSchema, { clusters: [cluster] });
    expect(out.timeout).toBe(3000);
    expect(out.clusters[0]).toEqual({ remote_cluster_id: 7n, remote_ip_info: { ip: '127.0.0.2', port: 26000 } });
  });
  test('cluster ids are exact uint64 from numbers, strings and unsafe-integer markers', () => {
    const ids = [0, '18446744073709551615', new UnsafeInteger('9007199254740993')];
    const out = v.parse(LinkRequestSchema, { clusters: ids.map((id) => ({ ...cluster, remote_cluster_id: id })) });
    expect(out.clusters.map((c) => c.remote_cluster_id)).toEqual([0n, 18446744073709551615n, 9007199254740993n]);
  });
  test('rejects ids off uint64 with the field path', () => {
    for (const id of [-1, 1.5, '18446744073709551616', '0x10', '', ' 1', null, true, new UnsafeInteger('-9007199254740993')]) {
      expect(issues(LinkRequestSchema, { clusters: [{ ...cluster, remote_cluster_id: id }] })).toEqual(['clusters[0].remote_cluster_id']);
    }
  });
  test('local_ip_info accepts ip or ip:port, IPv6 too', () => {
    const parse = (local: string) =>
      v.parse(LinkRequestSchema, { clusters: [{ ...cluster, local_ip_info: local }] }).clusters[0]?.local_ip_info;
    expect(parse('127.0.0.3')).toEqual({ ip: '127.0.0.3', port: 0 });
    expect(parse('127.0.0.3:26001')).toEqual({ ip: '127.0.0.3', port: 26001 });
    expect(parse('::1')).toEqual({ ip: '::1', port: 0 });
    expect(parse('[::1]:5')).toEqual({ ip: '::1', port: 5 });
    expect(issues(LinkRequestSchema, { clusters: [{ ...cluster, local_ip_info: 'nope' }] })).toEqual(['clusters[0].local_ip_info']);
  });
  test('every off-spec field is reported with its path', () => {
    expect(
      issues(LinkRequestSchema, {
        clusters: [{ remote_cluster_id: 1, remote_ip_info: '127.0.0.1' }, { remote_ip_info: 5 }],
        timeout: 0,
      }),
    ).toEqual(['clusters[0].remote_ip_info', 'clusters[1].remote_cluster_id', 'clusters[1].remote_ip_info', 'timeout']);
    expect(issues(LinkRequestSchema, { clusters: [] })).toEqual(['clusters']);
    expect(issues(LinkRequestSchema, {})).toEqual(['clusters']);
    expect(issues(LinkRequestSchema, [])).toEqual(['']);
    for (const timeout of [1.5, 2 ** 31, -5, '3000'])
      expect(issues(LinkRequestSchema, { clusters: [cluster], timeout })).toEqual(['timeout']);
  });
  test('accepts more than 16 clusters: the limit is an API status, not a schema error', () => {
    expect(v.parse(LinkRequestSchema, { clusters: new Array(17).fill(cluster) }).clusters).toHaveLength(17);
  });
});

describe('UnlinkRequestSchema', () => {
  test('force defaults to false and must be a boolean', () => {
    expect(v.parse(UnlinkRequestSchema, { clusters: [cluster] }).force).toBe(false);
    expect(v.parse(UnlinkRequestSchema, { clusters: [cluster], force: true }).force).toBe(true);
    expect(issues(UnlinkRequestSchema, { clusters: [cluster], force: 'yes' })).toEqual(['force']);
  });
});
