import { expect, test } from 'bun:test';
import { modulesLoadedBy } from '../../test/support/modules-loaded.ts';

test('the coordinator command loads the OpenTelemetry SDK and exporter only when tracing is configured, the HA modules only with a store', async () => {
  const loaded = await modulesLoadedBy(new URL('./coordinator.ts', import.meta.url).pathname);
  expect(loaded.some((f) => f.endsWith('/src/apps/coordinator.ts'))).toBe(true);
  const sdk = loaded.filter((f) => /\/@opentelemetry\/(sdk-[a-z-]+|exporter-[a-z-]+|otlp-[a-z-]+|resources)\//.test(f));
  expect(sdk).toEqual([]);
  expect(loaded.filter((f) => /\/proxy\/(otlp-export|otel-trace)\.ts$/.test(f))).toEqual([]);
  expect(loaded.filter((f) => /\/(apps\/coordinator-ha|store\/(open|election|memory))\.ts$/.test(f))).toEqual([]);
});
