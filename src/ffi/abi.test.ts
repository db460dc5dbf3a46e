import { afterAll, describe, expect, test } from 'bun:test';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PdlinkError } from '../core/errors.ts';
import { LLM_STATUS } from '../core/llm-status.ts';
import { CALL_BYTES, CALL_LAYOUT, CALLS_MAX_THREADS, CALL_OP } from './calls.ts';
import { CONFIG_BYTES, SECRET_MAX, SECRET_MIN } from './config.ts';
import {
  CLUSTER_BYTES,
  EVENT_BYTES,
  EVENT_KIND,
  LINK_INFO_BYTES,
  LINK_STATE,
  MAX_BLOCKS_PER_TRANSFER,
  MAX_CLUSTERS_PER_CALL,
  ROLE,
  SIDE,
} from './layout.ts';
import { DEFAULT_RUNTIME_PATH, PDRT_ABI_VERSION, loadCallQueue, loadRuntime, runtimeLibraryPath } from './library.ts';
import { buildNoQueueRuntime } from '../../test/doubles/no-queue-runtime.ts';
import { abiVersion } from './runtime.ts';

const header = readFileSync(join(import.meta.dir, '..', '..', 'native', 'include', 'pdrt.h'), 'utf8');
const scratch = mkdtempSync(join(tmpdir(), 'pdlink-abi-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

function headerStatuses(): Map<string, number> {
  const found = new Map<string, number>();
  for (const m of header.matchAll(/^#define PDRT_(\w+)\s+\(\(int32_t\)(0x[0-9A-Fa-f]+|\d+)\)/gm)) {
    found.set(`LLM_${m[1]}`, Number(m[2]) | 0);
  }
  return found;
}

function headerDefine(name: string): number {
  const m = new RegExp(`^#define ${name}\\s+(\\d+)`, 'm').exec(header);
  if (m === null) throw new Error(`${name} not in pdrt.h`);
  return Number(m[1]);
}

function thrown(fn: () => unknown): PdlinkError {
  try {
    fn();
  } catch (error) {
    if (error instanceof PdlinkError) return error;
    throw error;
  }
  throw new Error('did not throw');
}

describe('pdrt.h against the TypeScript tables', () => {
  test('every PDRT_* status equals the LLM_STATUS of the same name, and no code is missing either way', () => {
    const statuses = headerStatuses();
    expect(statuses.size).toBeGreaterThan(10);
    expect(Object.fromEntries(statuses)).toEqual({ ...LLM_STATUS });
  });

  test('PDRT_ABI_VERSION: header, TypeScript constant and loaded library agree', () => {
    expect(headerDefine('PDRT_ABI_VERSION')).toBe(PDRT_ABI_VERSION);
    expect(abiVersion()).toBe(PDRT_ABI_VERSION);
  });

  test('struct sizes and the cluster limit match the header', () => {
    const layout = (struct: string): number => {
      const m = new RegExp(`Fixed layout: (\\d+) bytes(?:(?!Fixed layout)[^])*?typedef struct ${struct} `).exec(header);
      if (m === null) throw new Error(`no layout comment for ${struct}`);
      return Number(m[1]);
    };
    expect(layout('pdrt_cluster')).toBe(CLUSTER_BYTES);
    expect(layout('pdrt_event')).toBe(EVENT_BYTES);
    expect(layout('pdrt_link_info')).toBe(LINK_INFO_BYTES);
    expect(layout('pdrt_config')).toBe(CONFIG_BYTES);
    expect(layout('pdrt_call')).toBe(CALL_BYTES);
    expect(headerDefine('PDRT_CALLS_MAX_THREADS')).toBe(CALLS_MAX_THREADS);
    expect([headerDefine('PDRT_CALL_LINK'), headerDefine('PDRT_CALL_UNLINK')]).toEqual([CALL_OP.link, CALL_OP.unlink]);
    expect(headerDefine('PDRT_SECRET_MIN')).toBe(SECRET_MIN);
    expect(headerDefine('PDRT_SECRET_MAX')).toBe(SECRET_MAX);
    expect(headerDefine('PDRT_MAX_BLOCKS_PER_TRANSFER')).toBe(MAX_BLOCKS_PER_TRANSFER);
    expect(headerDefine('PDRT_MAX_CLUSTERS_PER_CALL')).toBe(MAX_CLUSTERS_PER_CALL);
  });

  test("pdrt_call's field offsets, as the C compiler lays the header out, are the ones the queue writes and reads", () => {
    const source = join(scratch, 'call-layout.c');
    const program = join(scratch, 'call-layout');
    const fields = Object.keys(CALL_LAYOUT);
    writeFileSync(
      source,
      `#include <stddef.h>\n#include <stdio.h>\n#include "pdrt.h"\nint main(void) {\n` +
        fields.map((f) => `  printf("%s %zu\\n", "${f}", offsetof(pdrt_call, ${f}));\n`).join('') +
        `  printf("size %zu\\n", sizeof(pdrt_call));\n  return 0;\n}\n`,
    );
    const include = join(import.meta.dir, '..', '..', 'native', 'include');
    const cc = spawnSync('cc', ['-I', include, '-o', program, source], { encoding: 'utf8' });
    expect(cc.stderr).toBe('');
    const printed = Object.fromEntries(
      spawnSync(program, { encoding: 'utf8' })
        .stdout.trim()
        .split('\n')
        .map((line) => [line.split(' ')[0]!, Number(line.split(' ')[1])]),
    );
    expect(printed).toEqual({ ...CALL_LAYOUT, size: CALL_BYTES });
  });

  test('the role, event, side and link-state numbers the workers decode match the header', () => {
    const snake = (key: string) => key.replace(/[A-Z]/g, (c) => `_${c}`).toUpperCase();
    const tables = { ROLE, EVENT: EVENT_KIND, SIDE, LINK: LINK_STATE };
    for (const [prefix, table] of Object.entries(tables))
      for (const [key, value] of Object.entries(table))
        expect([prefix, key, headerDefine(`PDRT_${prefix}_${snake(key)}`)]).toEqual([prefix, key, value]);
  });
});

describe('loading the runtime', () => {
  test('PDLINK_RUNTIME overrides the default path', () => {
    expect(runtimeLibraryPath({})).toBe(DEFAULT_RUNTIME_PATH);
    expect(runtimeLibraryPath({ PDLINK_RUNTIME: '' })).toBe(DEFAULT_RUNTIME_PATH);
    expect(runtimeLibraryPath({ PDLINK_RUNTIME: '/opt/npu/libpdrt.so' })).toBe('/opt/npu/libpdrt.so');
  });

  test('a missing library is a clear error naming the path', () => {
    const path = join(scratch, 'missing.so');
    const error = thrown(() => loadRuntime(path));
    expect(error.code).toBe('unavailable');
    expect(error.message).toContain(path);
    expect(error.message).toContain('no such file');
  });

  test('a library of another ABI version is refused, naming the path and both versions', () => {
    const source = join(scratch, 'other.c');
    const path = join(scratch, 'libother.so');
    writeFileSync(source, 'int pdrt_abi_version(void) { return 99; }\n');
    const cc = spawnSync('cc', ['-shared', '-fPIC', '-o', path, source], { encoding: 'utf8' });
    expect(cc.status).toBe(0);
    const error = thrown(() => loadRuntime(path));
    expect(error.message).toContain(path);
    expect(error.message).toContain('ABI version 99');
    expect(error.message).toContain(`ABI version ${PDRT_ABI_VERSION}`);
  });

  test('a runtime without the optional call queue loads, and says it has none', () => {
    const path = buildNoQueueRuntime(scratch);
    expect(loadRuntime(path).symbols.pdrt_abi_version()).toBe(PDRT_ABI_VERSION);
    expect(loadCallQueue(path)).toBeUndefined();
    expect(loadCallQueue()).toBeDefined();
  });

  test('a file that is not a library is a clear error naming the path', () => {
    const path = join(scratch, 'junk.so');
    writeFileSync(path, 'not an ELF file');
    const error = thrown(() => loadRuntime(path));
    expect(error.message).toContain(path);
    expect(error.message).toContain('cannot load');
  });

  test('the facade reads PDLINK_RUNTIME when it first loads', () => {
    const path = join(scratch, 'nowhere.so');
    const child = spawnSync(process.execPath, ['-e', `import('${join(import.meta.dir, 'runtime.ts')}').then((rt) => rt.abiVersion())`], {
      env: { ...process.env, PDLINK_RUNTIME: path },
      encoding: 'utf8',
    });
    expect(child.status).not.toBe(0);
    expect(child.stderr).toContain(`device runtime ${path}: no such file`);
  });
});
