/**
 * The P leg with its retries: each attempt places the request on a pair (see placement.ts) and
 * asks its P; a failed P is reported, its capacity given back and left out of the next placement,
 * and the next attempt waits a jittered backoff, up to `maxRetries` retries. A P that rejects the
 * request itself is not retried: another P would answer the same.
 */
import { errors, PdlinkError } from '../../core/errors.ts';
import { attemptPrefill, type AttemptClock, type AttemptExchange } from './attempt.ts';
import { abortableDelay, backoffDelay } from './backoff.ts';
import { legText, prefillBody } from '../legs/legs.ts';
import { skipPrefill } from '../placement/local-path.ts';
import type { ProxyOutcome } from '../telemetry/metrics.ts';
import { NONE, placePair, type PlacingExchange } from '../placement/placement.ts';
import type { LedgerEnd, RequestReservation } from '../placement/reservation.ts';
import { Stop } from '../exchange/stop.ts';
import type { ExchangeDeps, ExchangeRequest, Prefilled } from '../exchange/types.ts';

/** What the prefill loop sees of its exchange. */
export interface PrefillExchange extends AttemptExchange, PlacingExchange {
  readonly request: AttemptExchange['request'] & Pick<ExchangeRequest, 'body'>;
  readonly deps: ExchangeDeps;
  end(outcome: ProxyOutcome, ledgerEnd: LedgerEnd): void;
  stopForAbort(instanceId: number | undefined): Stop;
}

/** The exchange's private parts the loop drives: its ledger record and the clock of each attempt. */
export interface PrefillControls {
  readonly reservation: Pick<RequestReservation, 'take' | 'end' | 'transferring'>;
  readonly attemptClock: AttemptClock;
}

/**
 * Runs prefill attempts until a P answers; failures end the exchange and throw its Stop.
 * @example const prefilled = await runPrefill(this, { reservation, attemptClock });
 */
export async function runPrefill(exchange: PrefillExchange, controls: PrefillControls): Promise<Prefilled> {
  const { settings, metrics, breakers } = exchange.deps;
  const { reservation, attemptClock } = controls;
  // Serialised before any pair is placed: a body that cannot be sent is the client's fault and must
  // reach no instance, and every attempt sends the same text.
  let legBody: string;
  try {
    legBody = legText(prefillBody(exchange.request.body));
  } catch (err) {
    throw exchange.fail('invalid', err instanceof PdlinkError ? err : errors.internal(err), { kind: 'none' });
  }
  let failedP: Set<number> | undefined;
  let last: PdlinkError | undefined;
  for (let attempt = 0; ; attempt++) {
    if (attempt > 0) {
      try {
        await abortableDelay(backoffDelay(attempt, settings.backoffBaseMs, settings.backoffCapMs), exchange.scope.signal);
      } catch {
        throw exchange.stopForAbort(undefined);
      }
    }
    exchange.trace?.scheduling();
    const { pair, request } = placePair(exchange, reservation, failedP ?? NONE, last);
    exchange.trace?.placed(pair);
    if (pair.path === 'local') return skipPrefill(exchange, pair, reservation);
    exchange.deps.picker.recordPath?.('disaggregated');
    const started = performance.now();
    const result = await attemptPrefill(exchange, attemptClock, pair, legBody);
    const p = pair.p.id;
    exchange.trace?.prefillEnded(result.kind, result.kind === 'ok' ? result.kvTransferParams : undefined);
    if (result.kind === 'ok') {
      breakers?.recordSuccess(p);
      exchange.deps.picker.recordPrefill?.(p, request);
      const answeredAt = performance.now();
      metrics.prefill((answeredAt - started) / 1000);
      reservation.transferring();
      return { pair, kvTransferParams: result.kvTransferParams, answeredAt };
    }
    if (result.kind === 'aborted') throw exchange.stopForAbort(p);
    if (result.kind === 'rejected') {
      // P judged the request itself: another P would answer the same, and P is healthy.
      breakers?.recordSuccess(p);
      exchange.end('upstream_rejected', {
        kind: 'fail',
        code: 'prefill_rejected',
        detail: `prefill instance ${p} answered ${result.status}`,
      });
      throw new Stop(result.response);
    }
    breakers?.recordFailure(p);
    // Give the capacity back now: the next attempt may pick another pair, and backoff takes time.
    reservation.end({ kind: 'fail', code: 'prefill_failed', detail: result.message });
    last = errors.upstreamFailed(result.message);
    (failedP ??= new Set()).add(p);
    if (attempt >= settings.maxRetries) throw exchange.fail('upstream_failed', last, { kind: 'none' });
    metrics.retried(result.reason);
  }
}
