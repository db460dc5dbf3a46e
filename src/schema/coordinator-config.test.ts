import { describe, expect, test } from 'bun:test';
import * as v from 'valibot';
import { toFieldIssues } from './issues.ts';
import { CoordinatorConfigFile } from './coordinator-config.ts';

function issuesOf(file: unknown): string[] {
  const result = v.safeParse(CoordinatorConfigFile, file, { abortEarly: false });
  return result.success ? [] : toFieldIssues(result.issues).map((i) => `${i.path}: ${i.message}`);
}

describe('CoordinatorConfigFile', () => {
  test('one schema covers MindIE sections and pdlink’s own scheduler and proxy_config', () => {
    const file = {
      http_config: { predict_port: '1025' },
      scheduler: { policy: { prefill: 'cache_affinity', decode: 'round_robin' }, circuit_breaker: { cooldown_ms: 5 } },
      proxy_config: { prefill_timeout_ms: 0, backoff_base_ms: 1, lease_ms: 30_000 },
      some_mindie_key: { kept: true },
    };
    expect(issuesOf(file)).toEqual([]);
  });

  test('a bad key of any section is named by its path', () => {
    // Which policies exist is the policy table's to say (config/coordinator.ts); the schema checks the spelling.
    expect(issuesOf({ scheduler: { policy: { decode: 'Round-Robin' } }, proxy_config: { backoff_cap_ms: 0, lease_ms: 'x' } })).toEqual([
      'scheduler.policy.decode: must be a policy name (lowercase letters, digits and _, starting with a letter)',
      'proxy_config.backoff_cap_ms: must be in [1, 2147483647]',
      'proxy_config.lease_ms: must be a number of milliseconds',
    ]);
  });
});
