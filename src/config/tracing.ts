/**
 * Whether the Coordinator's proxy traces its requests, and where the spans go: `pdlink.tracing.otlp_endpoint`
 * of the configuration file, else the standard OTEL_EXPORTER_OTLP_ENDPOINT. Neither set: tracing is off.
 */
import * as v from 'valibot';
import { ConfigError } from '../core/errors.ts';
import type { OtlpTracingSettings } from '../proxy/telemetry/otlp-export.ts';
import { OtlpEndpoint, type TracingSection } from '../schema/tracing-config.ts';

export const OTLP_ENDPOINT_ENV = 'OTEL_EXPORTER_OTLP_ENDPOINT';
export const DEFAULT_SERVICE_NAME = 'pdlink-coordinator';

/**
 * The tracing settings of a Coordinator, or undefined when tracing is off.
 * @example resolveTracingSettings(file.pdlink?.tracing, process.env) // { endpoint: 'http://127.0.0.1:4318', serviceName: 'pdlink-coordinator' }
 */
export function resolveTracingSettings(
  section: TracingSection | undefined,
  env: Record<string, string | undefined>,
): OtlpTracingSettings | undefined {
  const serviceName = section?.service_name ?? DEFAULT_SERVICE_NAME;
  if (section?.otlp_endpoint !== undefined) return { endpoint: section.otlp_endpoint, serviceName };
  const fromEnv = env[OTLP_ENDPOINT_ENV];
  if (fromEnv === undefined || fromEnv === '') return undefined;
  const checked = v.safeParse(OtlpEndpoint, fromEnv);
  if (!checked.success) throw new ConfigError(`env ${OTLP_ENDPOINT_ENV}: ${checked.issues[0].message}`);
  return { endpoint: checked.output, serviceName };
}
