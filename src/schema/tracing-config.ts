/**
 * `pdlink.tracing` of `ms_coordinator.json`: where the proxy sends its per-request spans. It is the
 * Coordinator's alone (the controller has no proxy), so the Coordinator's `pdlink` section is the
 * shared one plus this key.
 */
import * as v from 'valibot';
import { PdlinkSection } from './store-config.ts';

/** An OTLP/HTTP base URL, as OTEL_EXPORTER_OTLP_ENDPOINT takes it. */
export const OtlpEndpoint = v.pipe(
  v.string('must be a string'),
  v.url('must be an http(s) URL such as http://127.0.0.1:4318'),
  v.check((u) => /^https?:\/\//i.test(u), 'must be an http(s) URL such as http://127.0.0.1:4318'),
);

export const TracingSection = v.strictObject({
  /** OTLP/HTTP base URL; spans go to its /v1/traces. Absent (and no env): tracing is off. */
  otlp_endpoint: v.optional(OtlpEndpoint),
  /** `service.name` of the spans (default pdlink-coordinator). */
  service_name: v.optional(
    v.pipe(v.string('must be a string'), v.minLength(1, 'must not be empty'), v.maxLength(255, 'must be at most 255 characters')),
  ),
});
export type TracingSection = v.InferOutput<typeof TracingSection>;

export const CoordinatorPdlinkSection = v.strictObject({
  ...PdlinkSection.entries,
  tracing: v.optional(TracingSection),
});
