/**
 * Admission on the inference listener: between a request whose body has been read and its exchange.
 * It works out who the request is (the gateway's word, the accepted API key's tenant, the tenant and
 * class headers, the client's address), hands it to admission (src/admission/), and turns the outcome
 * into the response: the exchange's own once admitted, or a refusal in OpenAI's error shape with
 * `Retry-After`. A client that leaves while its request waits gives its place and its body back at once.
 */
import { createHash } from 'node:crypto';
import {
  type Admission,
  type AdmissionTicket,
  type AdmittedHow,
  identify,
  type Refusal,
  type SuppliedIdentity,
} from '../admission/index.ts';
import { errors, PdlinkError } from '../core/errors.ts';
import { platform } from '../platform/index.ts';
import type { CompletionBody, CompletionKind } from '../schema/completions.ts';
import { errorResponse } from '../proxy/exchange/errors.ts';
import type { Exchange } from '../proxy/exchange/exchange.ts';
import type { ProxyMetrics } from '../proxy/telemetry/metrics.ts';
import { promptOf } from '../proxy/exchange/prompt.ts';
import type { ProxyTracing } from '../proxy/telemetry/trace.ts';
import type { AdmissionNote, ExchangeRequest } from '../proxy/exchange/types.ts';
import { acceptedKeyOf } from './auth.ts';

/** The plugin API's hook: a gateway that knows who a request is says so (undefined: pdlink works it out). */
export type IdentifyHook = (request: Request) => SuppliedIdentity | undefined;

export interface AdmissionGateOptions {
  readonly admission: Admission;
  readonly identify?: IdentifyHook | undefined;
  /** Tenant names of API keys, by key; a key without a name is named by a digest, never by itself. */
  readonly keyTenants?: ReadonlyMap<string, string> | undefined;
  /** `scheduler.conditional_disaggregation.max_local_prefill_length`: prompts this short need room on D only. */
  readonly maxLocalPrefillLength?: number | undefined;
  readonly metrics: ProxyMetrics;
  readonly tracing?: ProxyTracing | undefined;
}

/** Makes the request's exchange; `onEnd` runs once when it has settled. */
export type ExchangeMaker = (request: ExchangeRequest, onEnd: () => void) => Exchange;

export class AdmissionGate {
  readonly #options: AdmissionGateOptions;
  readonly #admission: Admission;
  /** Tenants of the keys seen, so a key's digest is taken once. */
  readonly #keyTenants = new Map<string, string>();

  /** @example const gate = new AdmissionGate({ admission, metrics }); */
  constructor(options: AdmissionGateOptions) {
    this.#options = options;
    this.#admission = options.admission;
  }

  /** Requests admitted and not yet ended. */
  get inFlight(): number {
    return this.#admission.inFlight;
  }

  /**
   * Admits the request and runs its exchange, or answers the refusal; always resolves.
   * @example return gate.run(request, env, 'completions', exchangeRequest, (r, onEnd) => new Exchange(r, deps, onEnd));
   */
  run(request: Request, env: unknown, kind: CompletionKind, exchangeRequest: ExchangeRequest, make: ExchangeMaker): Promise<Response> {
    const admission = this.#admission;
    const settings = admission.settings;
    const { metrics, tracing } = this.#options;
    const { api, requestId } = exchangeRequest;
    const headers = request.headers;
    const who = identify(settings, {
      supplied: this.#options.identify?.(request),
      keyTenant: this.#keyTenant(acceptedKeyOf(request)),
      header: (name) => headers.get(name),
      address: () => platform.peerAddress(request, env),
    });
    if (who instanceof PdlinkError) {
      metrics.requestEnded(api, who.status === 400 ? 'invalid' : 'internal');
      return Promise.resolve(errorResponse(who, requestId));
    }
    // Most requests start at once, inside enter(): their answer is the exchange's own promise, with
    // no promise around it. One that waits gets a promise its start or refusal settles later.
    let answer: Promise<Response> | undefined;
    let later: ((answer: Promise<Response> | Response) => void) | undefined;
    const settle = (value: Promise<Response>): void => {
      if (later === undefined) answer = value;
      else later(value);
    };
    let exchange: Exchange | undefined;
    const signal = request.signal;
    const note = (how: string, waitMs: number): AdmissionNote => ({
      tenant: who.tenant,
      class: settings.classes[who.classIndex]!.name,
      how,
      waitMs,
    });
    const ticket = admission.enter(
      {
        tenant: who.tenant,
        classIndex: who.classIndex,
        weight: who.policy.weight,
        needsPrefill: this.#needsPrefill(kind, exchangeRequest.body),
        bodyBytes: bodyBytesOf(headers, exchangeRequest.body),
      },
      {
        start: (how: AdmittedHow, admitted: AdmissionTicket) => {
          if (how !== 'immediate') signal.removeEventListener('abort', onAbort);
          // The note is for the request's trace alone.
          const admittedRequest =
            tracing === undefined
              ? exchangeRequest
              : { ...exchangeRequest, admission: note(how, how === 'immediate' ? 0 : Math.round(performance.now() - admitted.arrivedAt)) };
          exchange = make(admittedRequest, () => admission.leave(admitted));
          const running = exchange.run();
          if (!settings.preemption) return settle(running);
          settle(
            running.then((res) => {
              admission.answering(admitted);
              if (admitted.preempted && res.status === 503) res.headers.set('retry-after', String(settings.retryAfterSeconds));
              return res;
            }),
          );
        },
        refuse: (refusal: Refusal) => {
          signal.removeEventListener('abort', onAbort);
          const outcome = refusal.status === 503 ? 'unavailable' : 'rejected';
          metrics.requestEnded(api, outcome);
          tracing?.start({ ...exchangeRequest, admission: note(refusal.reason, 0) }).end(outcome);
          settle(Promise.resolve(refusalResponse(refusal, requestId)));
        },
        ...(settings.preemption ? { preempt: () => exchange?.preempt() ?? false } : {}),
      },
    );
    function onAbort(): void {
      if (ticket.state !== 'queued') return;
      admission.cancel(ticket);
      metrics.requestEnded(api, 'client_abort');
      // Nobody reads this: the client is gone.
      settle(Promise.resolve(new Response(null, { status: 499 })));
    }
    if (answer !== undefined) return answer;
    return new Promise<Response>((resolve) => {
      later = resolve;
      if (signal.aborted) onAbort();
      else signal.addEventListener('abort', onAbort, { once: true });
    });
  }

  #needsPrefill(kind: CompletionKind, body: CompletionBody): boolean {
    const limit = this.#options.maxLocalPrefillLength;
    return limit === undefined || promptOf(kind, body).tokenCount > limit;
  }

  #keyTenant(key: string | undefined): string | undefined {
    if (key === undefined) return undefined;
    let tenant = this.#keyTenants.get(key);
    if (tenant === undefined) {
      tenant = this.#options.keyTenants?.get(key) ?? `key-${createHash('sha256').update(key).digest('hex').slice(0, 8)}`;
      // Only accepted keys reach here, so the map is as bounded as the key file.
      this.#keyTenants.set(key, tenant);
    }
    return tenant;
  }
}

/**
 * The response of a refusal: OpenAI's error shape, the request id, `Retry-After`.
 * @example refusalResponse({ reason: 'timeout', status: 429, message: '...', retryAfterSeconds: 1 }, 'req-1')
 */
export function refusalResponse(refusal: Refusal, requestId: string): Response {
  const err =
    refusal.reason === 'unavailable'
      ? errors.unavailable(refusal.message)
      : errors.admissionRefused(refusal.reason === 'timeout' ? 'queue_timeout' : refusal.reason, refusal.message);
  const res = errorResponse(err, requestId);
  res.headers.set('retry-after', String(refusal.retryAfterSeconds));
  return res;
}

/** What a waiting request's body holds: its declared length (enforced by the framing), else its JSON's length. */
function bodyBytesOf(headers: Headers, body: CompletionBody): number {
  const declared = Number(headers.get('content-length') ?? Number.NaN);
  return Number.isSafeInteger(declared) && declared >= 0 ? declared : JSON.stringify(body).length;
}
