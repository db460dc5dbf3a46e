import { describe, expect, test } from 'bun:test';
import * as v from 'valibot';
import { REPORT_SCHEMA, REPORT_VERSION } from './report.ts';
import { BenchReportSchema } from './report-schema.ts';
import { sampleReport } from '../../test/fixtures/bench-report.ts';

/** Every key path of a value (array elements as `[]`), sorted: the report's shape, independent of its numbers. */
function shape(value: unknown, path = '', out = new Set<string>()): Set<string> {
  if (Array.isArray(value)) {
    for (const item of value) shape(item, `${path}[]`, out);
  } else if (typeof value === 'object' && value !== null) {
    for (const [key, inner] of Object.entries(value)) {
      // Record keys are data, not shape.
      const name = path.endsWith('errorsByStatus') || path.endsWith('settings') || path.endsWith('byTenant') ? '*' : key;
      out.add(`${path}.${name}`);
      shape(inner, `${path}.${name}`, out);
    }
  }
  return out;
}

describe('the bench report schema (version 3)', () => {
  test('a report passes the strict schema, with its name and version', () => {
    const report = JSON.parse(JSON.stringify(sampleReport())) as unknown;
    const parsed = v.parse(BenchReportSchema, report);
    expect(parsed.schema).toBe(REPORT_SCHEMA);
    expect(parsed.version).toBe(REPORT_VERSION);
    expect(REPORT_VERSION).toBe(3);
    expect(parsed.partial).toBe(true);
    expect(parsed.runs.map((r) => r.label)).toEqual(['open', 'closed-c4']);
    expect(parsed.runs[0]!.summary.errorsByStatus).toEqual({ '503': 1 });
    // 19 completed; TTFT ≤ 60 for indexes 0..10 except the failed 3.
    expect(parsed.runs[0]!.summary.goodput.requests).toBe(10);
  });

  test('a field added or removed fails the schema', () => {
    const report = JSON.parse(JSON.stringify(sampleReport())) as Record<string, unknown>;
    expect(v.safeParse(BenchReportSchema, { ...report, extra: 1 }).success).toBe(false);
    const { slo: _slo, ...missing } = report;
    expect(v.safeParse(BenchReportSchema, missing).success).toBe(false);
  });

  test('the shape is the documented one: changing it means a new version and a docs/bench.md update', () => {
    const keys = [...shape(sampleReport())].sort();
    expect(keys).toMatchSnapshot();
  });
});
