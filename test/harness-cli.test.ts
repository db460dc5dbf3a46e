/**
 * `pdlink bench` refuses bad arguments before sending anything: exit status 2, a message naming
 * the option, no report written.
 */
import { afterAll, describe, expect, test } from 'bun:test';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { REPO_ROOT } from './support/child.ts';

const dir = mkdtempSync(join(tmpdir(), 'pdlink-bench-cli-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function bench(...args: string[]): { status: number | null; stderr: string } {
  const out = join(dir, 'report');
  const res = spawnSync(process.execPath, [join(REPO_ROOT, 'src', 'main.ts'), 'bench', '--out', out, ...args], { encoding: 'utf8' });
  expect(existsSync(`${out}.json`)).toBe(false);
  return { status: res.status, stderr: res.stderr };
}

describe('pdlink bench --profile arguments', () => {
  const base = ['--base-url', 'http://127.0.0.1:9', '--model', 'm'];
  const profile = join(dir, 'profile.json');
  test.each([
    [[] as string[], '--base-url: an http(s) URL is required, got null'],
    [[...base, '--rates', '1,x'], '--rates: must be a comma-separated list of numbers > 0, got "1,x"'],
    [[...base, '--concurrency', '0'], '--concurrency: must be a comma-separated list of integers ≥ 1, got "0"'],
    [[...base, '--output-len', '1'], '--output-len: must be an integer ≥ 2, got "1"'],
    [[...base, '--out', 'x'], "Unknown option '--out'"],
  ])('%j is refused with a message naming the option', (args, message) => {
    const res = spawnSync(process.execPath, [join(REPO_ROOT, 'src', 'main.ts'), 'bench', '--profile', profile, ...args], {
      encoding: 'utf8',
    });
    expect(res.status).toBe(2);
    expect(res.stderr).toContain(message);
    expect(existsSync(profile)).toBe(false);
  });
});

describe('pdlink bench arguments', () => {
  const base = ['--base-url', 'http://127.0.0.1:9', '--model', 'm'];
  test.each([
    [[] as string[], '--base-url: required'],
    [['--base-url', 'localhost:8000'], '--base-url: must be an http(s) URL, got "localhost:8000"'],
    [[...base, '--endpoint', 'embeddings'], '--endpoint: must be completions or chat, got "embeddings"'],
    [[...base, '--rate', '0'], '--rate: must be a number > 0, got "0"'],
    [[...base, '--prefix-share', '1.5'], '--prefix-share: must be a number in [0, 1], got "1.5"'],
    [[...base, '--max-requests', '2.5'], '--max-requests: must be an integer ≥ 1, got "2.5"'],
    [[...base, '--input-len', 'normal:5'], '--input-len: must be N, uniform:MIN:MAX'],
    [[...base, '--concurrency', '1,0'], '--concurrency: must be a comma-separated list of integers ≥ 1, got "1,0"'],
    [[...base, '--slo-ttft-ms=-5'], '--slo-ttft-ms: must be a number > 0, got "-5"'],
    [[...base, '--trace', '/nonexistent/trace.jsonl'], '--trace: cannot read /nonexistent/trace.jsonl'],
    [[...base, '--frobnicate', '1'], "Unknown option '--frobnicate'"],
    [[...base, '--then-rate', '0'], '--then-rate: must be a number > 0, got "0"'],
    [[...base, '--shift-at', '2'], '--shift-at: must be a number in [0, 1], got "2"'],
    [[...base, '--then-output-len', 'x'], '--then-output-len: must be N, uniform:MIN:MAX'],
    [[...base, '--trace', 't.jsonl', '--then-rate', '2'], "--then-rate: a synthetic workload's option, not with --trace"],
    [[...base, '--tenants', 'a:x:1', '--shift-at', '0.5'], '--then-*, --shift-at: not with --tenants'],
    [[...base, '--controller-url', '127.0.0.1:1030'], '--controller-url: must be an http(s) URL, got "127.0.0.1:1030"'],
  ])('%j is refused with a message naming the option', (args, message) => {
    const { status, stderr } = bench(...args);
    expect(status).toBe(2);
    expect(stderr).toContain(message);
  });

  test('a bad trace line is refused with its line number and field', () => {
    const trace = join(dir, 'bad.jsonl');
    writeFileSync(trace, '{"timestamp": 0, "input_length": 10, "output_length": 1, "hash_ids": [1]}\n{"timestamp": 5}\n');
    const { status, stderr } = bench(...base, '--trace', trace);
    expect(status).toBe(2);
    expect(stderr).toContain(`--trace: ${trace}: line 2: input_length must be a number ≥ 1, got undefined`);
  });

  test('no --model and a server without /v1/models: the message says to pass --model', () => {
    const { status, stderr } = bench('--base-url', 'http://127.0.0.1:9');
    expect(status).toBe(2);
    expect(stderr).toContain('pass --model');
  });
});
