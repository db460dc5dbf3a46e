/**
 * Tracing on: a tracer provider of its own (never the process-wide global, so nothing else in the
 * process starts tracing by accident) whose spans are batched and sent over OTLP/HTTP (JSON) to
 * `<endpoint>/v1/traces`, as OTEL_EXPORTER_OTLP_ENDPOINT means it. The batch processor honours the
 * OTEL_BSP_* variables (delay, queue and batch sizes); `shutdown` sends what is still queued.
 */
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { BasicTracerProvider, BatchSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { OtelTracing } from './otel-trace.ts';
import type { ProxyTracing } from './trace.ts';

export interface OtlpTracingSettings {
  /** OTLP/HTTP base URL, e.g. http://127.0.0.1:4318; spans go to its /v1/traces. */
  readonly endpoint: string;
  /** `service.name` of the spans. */
  readonly serviceName: string;
}

/** The proxy's tracing plus the call that flushes and stops its exporter. */
export interface OtlpTracing {
  readonly tracing: ProxyTracing;
  /** Sends the spans queued so far. */
  flush(): Promise<void>;
  shutdown(): Promise<void>;
}

/**
 * The URL spans are posted to: the signal path appended to the base endpoint.
 * @example tracesUrl('http://collector:4318/') // 'http://collector:4318/v1/traces'
 */
export function tracesUrl(endpoint: string): string {
  return `${endpoint.replace(/\/+$/, '')}/v1/traces`;
}

/**
 * Starts exporting the proxy's spans to `settings.endpoint`.
 * @example const otlp = createOtlpTracing({ endpoint: 'http://127.0.0.1:4318', serviceName: 'pdlink-coordinator' });
 */
export function createOtlpTracing(settings: OtlpTracingSettings): OtlpTracing {
  const exporter = new OTLPTraceExporter({ url: tracesUrl(settings.endpoint) });
  const provider = new BasicTracerProvider({
    resource: resourceFromAttributes({ 'service.name': settings.serviceName }),
    spanProcessors: [new BatchSpanProcessor(exporter)],
  });
  return {
    tracing: new OtelTracing(provider.getTracer('pdlink')),
    flush: () => provider.forceFlush(),
    shutdown: () => provider.shutdown(),
  };
}
