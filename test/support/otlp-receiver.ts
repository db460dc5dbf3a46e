/**
 * An in-process OTLP/HTTP trace receiver for tests: a Bun server on loopback that accepts
 * `POST /v1/traces` in the JSON encoding (what @opentelemetry/exporter-trace-otlp-http sends),
 * decodes each export request into flat spans and keeps them for the test to look at.
 */

/** One received span, its attributes decoded to plain values. */
export interface ReceivedSpan {
  readonly traceId: string;
  readonly spanId: string;
  /** Empty for a root span. */
  readonly parentSpanId: string;
  readonly name: string;
  /** OTLP SpanKind: 1 internal, 2 server, 3 client. */
  readonly kind: number;
  readonly attributes: Readonly<Record<string, string | number | boolean>>;
  /** OTLP status code: 0 unset, 1 ok, 2 error. */
  readonly status: { readonly code: number; readonly message?: string };
  readonly serviceName: string | undefined;
  readonly startNs: bigint;
  readonly endNs: bigint;
}

interface OtlpValue {
  stringValue?: string;
  intValue?: string | number;
  doubleValue?: number;
  boolValue?: boolean;
}
interface OtlpKeyValue {
  key: string;
  value: OtlpValue;
}
interface OtlpSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  kind: number;
  attributes?: OtlpKeyValue[];
  status?: { code?: number; message?: string };
  startTimeUnixNano: string | number;
  endTimeUnixNano: string | number;
}
interface ExportRequest {
  resourceSpans?: { resource?: { attributes?: OtlpKeyValue[] }; scopeSpans?: { spans?: OtlpSpan[] }[] }[];
}

function plain(value: OtlpValue): string | number | boolean {
  if (value.stringValue !== undefined) return value.stringValue;
  if (value.intValue !== undefined) return Number(value.intValue);
  if (value.doubleValue !== undefined) return value.doubleValue;
  if (value.boolValue !== undefined) return value.boolValue;
  throw new Error(`unexpected OTLP value ${JSON.stringify(value)}`);
}

function attributesOf(list: OtlpKeyValue[] | undefined): Record<string, string | number | boolean> {
  return Object.fromEntries((list ?? []).map((kv) => [kv.key, plain(kv.value)]));
}

/**
 * Decodes one OTLP/JSON export request into spans.
 * @example decodeExport(await request.json())
 */
export function decodeExport(body: ExportRequest): ReceivedSpan[] {
  const spans: ReceivedSpan[] = [];
  for (const rs of body.resourceSpans ?? []) {
    const service = attributesOf(rs.resource?.attributes)['service.name'];
    for (const ss of rs.scopeSpans ?? []) {
      for (const s of ss.spans ?? []) {
        spans.push({
          traceId: s.traceId,
          spanId: s.spanId,
          parentSpanId: s.parentSpanId ?? '',
          name: s.name,
          kind: s.kind,
          attributes: attributesOf(s.attributes),
          status: { code: s.status?.code ?? 0, ...(s.status?.message === undefined ? {} : { message: s.status.message }) },
          serviceName: typeof service === 'string' ? service : undefined,
          startNs: BigInt(s.startTimeUnixNano),
          endNs: BigInt(s.endTimeUnixNano),
        });
      }
    }
  }
  return spans;
}

export class OtlpReceiver {
  readonly spans: ReceivedSpan[] = [];
  /** Content types of the export requests received. */
  readonly contentTypes: string[] = [];
  readonly #server: ReturnType<typeof Bun.serve>;

  constructor() {
    this.#server = Bun.serve({
      hostname: '127.0.0.1',
      port: 0,
      fetch: async (request) => {
        const url = new URL(request.url);
        if (request.method !== 'POST' || url.pathname !== '/v1/traces') return new Response('not found', { status: 404 });
        this.contentTypes.push(request.headers.get('content-type') ?? '');
        this.spans.push(...decodeExport((await request.json()) as ExportRequest));
        return Response.json({});
      },
    });
  }

  /** The base URL an exporter is given (OTEL_EXPORTER_OTLP_ENDPOINT style). */
  get endpoint(): string {
    return `http://127.0.0.1:${this.#server.port}`;
  }

  /** Spans of one trace. */
  trace(traceId: string): ReceivedSpan[] {
    return this.spans.filter((s) => s.traceId === traceId);
  }

  stop(): Promise<void> {
    return this.#server.stop(true);
  }
}
