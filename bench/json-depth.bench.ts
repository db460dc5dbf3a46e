/**
 * One question: what does the nesting-depth scan (src/http/json-depth.ts), run on every JSON body
 * before it is parsed, cost next to parsing it? Measured as scan time / JSON.parse time on the
 * same text, for the largest body pdlink expects (a 4096-instance refresh snapshot) and a typical
 * chat completion (a system and a user message, two tools with JSON-schema parameters, a
 * `response_format` schema). Reported alongside: parseJsonExact (scan + parse, the body reader's
 * path) / JSON.parse. Goal: the scan costs less than the parse it protects (< 1×).
 *
 * Run: node_modules/.bin/bun bench/json-depth.bench.ts   (add --quick for a short check that writes nothing)
 */
import { parseJsonExact } from '../src/core/exact-json.ts';
import { depthOverflowAt } from '../src/core/json-depth.ts';
import { MAX_JSON_DEPTH } from '../src/core/limits.ts';
import { exampleSnapshot } from '../test/doubles/refresh-examples.ts';
import { alternate, markdownTable, msPerCall, spread, times, writeResults } from './lib.ts';

const QUICK = process.argv.includes('--quick');
const ROUNDS = QUICK ? 2 : 20;
const ROUND_MS = QUICK ? 30 : 200;

const schema = {
  type: 'object',
  properties: {
    city: { type: 'string', description: 'City name, e.g. "Paris" or "São Paulo"' },
    unit: { type: 'string', enum: ['celsius', 'fahrenheit'] },
    days: {
      type: 'array',
      items: { type: 'object', properties: { date: { type: 'string' }, hours: { type: 'array', items: { type: 'integer' } } } },
    },
  },
  required: ['city'],
};

const CHAT = JSON.stringify({
  model: 'your_model_name',
  stream: true,
  max_tokens: 512,
  temperature: 0.7,
  messages: [
    {
      role: 'system',
      content: 'You are a helpful assistant. Answer in JSON when asked; quote "names" and escape \\ as needed. '.repeat(4),
    },
    { role: 'user', content: 'What will the weather be like in Paris [and Lyon] {this week}? Give me hourly figures. '.repeat(30) },
  ],
  tools: [
    { type: 'function', function: { name: 'get_weather', description: 'Forecast for a city', parameters: schema } },
    {
      type: 'function',
      function: { name: 'get_time', description: 'Local time', parameters: { type: 'object', properties: { tz: { type: 'string' } } } },
    },
  ],
  response_format: { type: 'json_schema', json_schema: { name: 'forecast', schema } },
});

const BODIES: [string, string][] = [
  ['refresh, 4096 instances', JSON.stringify(exampleSnapshot(4096))],
  ['chat completion with tools', CHAT],
];

async function main(): Promise<void> {
  const rows: (string | number)[][] = [];
  const json: Record<string, unknown>[] = [];
  for (const [name, text] of BODIES) {
    if (depthOverflowAt(text, MAX_JSON_DEPTH) !== -1) throw new Error(`${name} is deeper than the limit`);
    const parse = () => msPerCall(() => JSON.parse(text), ROUND_MS);
    const scan = await alternate(ROUNDS, parse, () => msPerCall(() => depthOverflowAt(text, MAX_JSON_DEPTH), ROUND_MS));
    const exact = await alternate(ROUNDS, parse, () => msPerCall(() => parseJsonExact(text), ROUND_MS));
    const scanRatio = spread(scan.ratios);
    const exactRatio = spread(exact.ratios);
    const kb = (Buffer.byteLength(text) / 1024).toFixed(1);
    rows.push([
      `${name} (${kb} KiB)`,
      'scan',
      (spread(scan.baseline).median * 1000).toFixed(1),
      (spread(scan.subject).median * 1000).toFixed(1),
      times(scanRatio.median),
      `${times(scanRatio.p10)}–${times(scanRatio.p90)}`,
    ]);
    rows.push([
      '',
      'parseJsonExact',
      (spread(exact.baseline).median * 1000).toFixed(1),
      (spread(exact.subject).median * 1000).toFixed(1),
      times(exactRatio.median),
      `${times(exactRatio.p10)}–${times(exactRatio.p90)}`,
    ]);
    json.push({ name, bytes: Buffer.byteLength(text), scan, exact, scanRatio, exactRatio });
  }
  const scanRatios = json.map((r) => (r['scanRatio'] as { median: number }).median);
  const summary = `Depth scan / JSON.parse: ${BODIES.map(([name], i) => `${name} ${times(scanRatios[i]!)}`).join(', ')}; goal < 1×: ${
    scanRatios.every((r) => r < 1) ? 'met' : 'NOT met'
  }.`;
  const table = markdownTable(
    ['body', 'subject', 'JSON.parse µs (median)', 'subject µs (median)', 'ratio (median)', 'ratio p10–p90'],
    rows,
  );
  console.log(`${summary}\n\n${table}`);
  if (QUICK) return;
  writeResults('json-depth', {
    summary,
    markdownTable: table,
    json: { rounds: ROUNDS, roundMs: ROUND_MS, limit: MAX_JSON_DEPTH, bodies: json },
  });
}

await main();
