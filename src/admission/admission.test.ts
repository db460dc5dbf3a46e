import { describe, expect, test } from 'bun:test';
import { Admission, type AdmissionTimers, type RoomView } from './admission.ts';
import { resolveAdmissionSettings } from './settings.ts';
import type { AdmissionRequest, AdmissionTicket, AdmittedHow, Refusal } from './types.ts';

/** Stage room as numbers a test sets; a started request takes one of each stage it needs. */
class FakeRoom implements RoomView {
  prefill = 1;
  decode = 1;
  prefillInstances = 1;
  decodeInstances = 1;
  fits(needsPrefill: boolean): boolean {
    return this.decode > 0 && (!needsPrefill || this.prefill > 0);
  }
  servable(needsPrefill: boolean): boolean {
    return this.decodeInstances > 0 && (!needsPrefill || this.prefillInstances > 0);
  }
  loads() {
    return {
      prefill: { instances: this.prefillInstances, room: this.prefill, inFlight: 0 },
      decode: { instances: this.decodeInstances, room: this.decode, inFlight: 0 },
    };
  }
}

/** Timers on a clock the test moves. */
class FakeTimers implements AdmissionTimers {
  at = 0;
  readonly #timers = new Map<number, { at: number; fn: () => void }>();
  #next = 1;
  now(): number {
    return this.at;
  }
  set(fn: () => void, ms: number): unknown {
    const id = this.#next++;
    this.#timers.set(id, { at: this.at + ms, fn });
    return id;
  }
  clear(handle: unknown): void {
    this.#timers.delete(handle as number);
  }
  advance(ms: number): void {
    this.at += ms;
    for (;;) {
      const due = [...this.#timers].filter(([, t]) => t.at <= this.at).sort((a, b) => a[1].at - b[1].at)[0];
      if (due === undefined) return;
      this.#timers.delete(due[0]);
      due[1].fn();
    }
  }
  get pending(): number {
    return this.#timers.size;
  }
}

interface Outcome {
  started?: AdmittedHow;
  refused?: Refusal;
  ticket: AdmissionTicket;
  /** Ends the started request, giving its room back. */
  end(): void;
  cut: boolean;
}

function setup(section: Record<string, unknown> = {}, maxInFlight = 100) {
  const room = new FakeRoom();
  const timers = new FakeTimers();
  const settings = resolveAdmissionSettings(section);
  const admission = new Admission({ settings, room, maxInFlight, timers });
  const order: string[] = [];
  const send = (
    name: string,
    request: Partial<AdmissionRequest> = {},
    options: { cuttable?: boolean; answered?: () => boolean } = {},
  ): Outcome => {
    const full: AdmissionRequest = { tenant: 't', classIndex: 0, weight: 1, needsPrefill: true, bodyBytes: 100, ...request };
    const outcome = { cut: false } as Outcome;
    let held = false;
    outcome.end = () => {
      if (held) {
        held = false;
        room.decode++;
        if (full.needsPrefill) room.prefill++;
      }
      admission.leave(outcome.ticket);
      admission.dispatch();
    };
    outcome.ticket = admission.enter(full, {
      start(how, ticket) {
        outcome.ticket = ticket;
        outcome.started = how;
        order.push(name);
        held = true;
        room.decode--;
        if (full.needsPrefill) room.prefill--;
      },
      refuse(refusal) {
        outcome.refused = refusal;
      },
      ...(options.cuttable === true
        ? {
            preempt() {
              if (options.answered?.() === true) return false;
              outcome.cut = true;
              return true;
            },
          }
        : {}),
    });
    return outcome;
  };
  return { room, timers, admission, settings, order, send };
}

describe('admission', () => {
  test('room and nobody waiting: starts at once, synchronously', () => {
    const { send, admission } = setup();
    const a = send('a');
    expect(a.started).toBe('immediate');
    expect(admission.inFlight).toBe(1);
    a.end();
    expect(admission.inFlight).toBe(0);
  });

  test('higher classes are served first, whatever the arrival order', () => {
    const { send, order } = setup();
    const running: Outcome[] = [send('first')];
    const all: Outcome[] = [];
    for (let i = 0; i < 3; i++) all.push(send(`batch-${i}`, { classIndex: 1 }));
    for (let i = 0; i < 2; i++) all.push(send(`interactive-${i}`, { classIndex: 0 }));
    // One place: each end starts the next.
    for (let i = 0; i < 5; i++) {
      running.shift()!.end();
      running.push(all.find((o) => o.ticket.state === 'running')!);
    }
    expect(order).toEqual(['first', 'interactive-0', 'interactive-1', 'batch-0', 'batch-1', 'batch-2']);
  });

  test('strict order: a newcomer queues behind a waiting request of its class, even with room', () => {
    const { send, room } = setup();
    room.decode = 0;
    const waiting = send('w');
    expect(waiting.ticket.state).toBe('queued');
    room.decode = 1;
    // Room came back but nobody told admission yet: a newcomer of the same class must not jump the line.
    const newcomer = send('n');
    expect(newcomer.ticket.state).toBe('queued');
    // A lower class does not jump it either.
    expect(send('low', { classIndex: 1 }).ticket.state).toBe('queued');
  });

  test('two tenants at 10:1 with equal weights share within 10 % while both wait', () => {
    const { send, room, admission } = setup({ max_queued: 10_000 });
    room.prefill = 0;
    const started: Outcome[] = [];
    const queue = (tenant: string, n: number) => {
      for (let i = 0; i < n; i++) started.push(send(tenant, { tenant }));
    };
    for (let round = 0; round < 50; round++) {
      queue('flood', 10);
      queue('trickle', 1);
    }
    // Serve 80 one by one (each end starts the next): both stay backlogged, the trickle has 50 waiting.
    const served: string[] = [];
    room.prefill = 1;
    admission.dispatch();
    for (let i = 0; i < 80; i++) {
      const running = started.filter((o) => o.ticket.state === 'running');
      expect(running).toHaveLength(1);
      served.push(running[0]!.ticket.tenant);
      running[0]!.end();
    }
    const trickle = served.filter((t) => t === 'trickle').length;
    expect(Math.abs(trickle - 40)).toBeLessThanOrEqual(4);
  });

  test('a wait that runs out: 429 with Retry-After, its place freed; 503 when nothing can serve', () => {
    const { send, room, timers, admission } = setup({ classes: [{ name: 'interactive', queue_timeout_ms: 500 }], retry_after_seconds: 3 });
    room.prefill = 0;
    const a = send('a');
    timers.advance(499);
    expect(a.refused).toBeUndefined();
    timers.advance(1);
    expect(a.refused).toMatchObject({ reason: 'timeout', status: 429, retryAfterSeconds: 3 });
    expect(a.refused!.message).toContain('500 ms');
    expect(admission.queued).toBe(0);
    expect(admission.snapshot().queuedBytes).toBe(0);
    const b = send('b');
    room.prefillInstances = 0;
    timers.advance(500);
    expect(b.refused).toMatchObject({ reason: 'unavailable', status: 503 });
    expect(timers.pending).toBe(0);
  });

  test('a class with a zero timeout never waits', () => {
    const { send, room } = setup({ classes: [{ name: 'now', queue_timeout_ms: 0 }] });
    room.decode = 0;
    expect(send('a').refused).toMatchObject({ reason: 'timeout', status: 429 });
  });

  test('nothing can serve: 503 at once, nothing queued', () => {
    const { send, room, admission } = setup();
    room.decodeInstances = 0;
    expect(send('a').refused).toMatchObject({ reason: 'unavailable', status: 503 });
    expect(admission.queued).toBe(0);
  });

  test('a request D prefills itself needs room on D only', () => {
    const { send, room } = setup();
    room.prefill = 0;
    expect(send('local', { needsPrefill: false }).started).toBe('immediate');
    expect(send('disaggregated').ticket.state).toBe('queued');
  });

  test('a full queue sheds the lowest class first, never the newcomer’s class or higher', () => {
    const { send, room, admission } = setup({ max_queued: 3 });
    room.decode = 0;
    const batch = [
      send('b0', { classIndex: 1, tenant: 'x' }),
      send('b1', { classIndex: 1, tenant: 'y' }),
      send('b2', { classIndex: 1, tenant: 'y' }),
    ];
    const i0 = send('i0', { classIndex: 0 });
    expect(i0.ticket.state).toBe('queued');
    // The newest of the tenant waiting most went.
    expect(batch.map((o) => o.refused?.reason)).toEqual([undefined, undefined, 'shed']);
    expect(batch[2]!.refused).toMatchObject({ status: 429 });
    send('i1', { classIndex: 0 });
    send('i2', { classIndex: 0 });
    expect(batch.map((o) => o.refused?.reason)).toEqual(['shed', 'shed', 'shed']);
    // Full of the highest class: a newcomer of that class is refused itself.
    expect(send('i3', { classIndex: 0 }).refused).toMatchObject({ reason: 'queue_full', status: 429 });
    expect(send('b3', { classIndex: 1 }).refused?.reason).toBe('queue_full');
    expect(admission.queued).toBe(3);
  });

  test('the byte bound sheds as the count bound does; a body larger than the bound is refused alone', () => {
    const { send, room, admission } = setup({ max_queued_bytes: 1000 });
    room.decode = 0;
    const low = send('low', { classIndex: 1, bodyBytes: 600 });
    const high = send('high', { classIndex: 0, bodyBytes: 600 });
    expect(low.refused?.reason).toBe('shed');
    expect(high.ticket.state).toBe('queued');
    expect(send('huge', { classIndex: 0, bodyBytes: 1001 }).refused?.reason).toBe('queue_full');
    expect(admission.snapshot().queuedBytes).toBe(600);
  });

  test('a client that leaves while waiting frees its place and its body', () => {
    const { send, room, admission, timers } = setup();
    room.decode = 0;
    const a = send('a', { bodyBytes: 5000 });
    expect(admission.snapshot()).toMatchObject({ queued: 1, queuedBytes: 5000 });
    admission.cancel(a.ticket);
    expect(admission.snapshot()).toMatchObject({ queued: 0, queuedBytes: 0 });
    expect(a.ticket.handlers).toBeUndefined();
    expect(a.ticket.state).toBe('done');
    // Nobody waits: its timer is gone with it.
    expect(timers.pending).toBe(0);
    timers.advance(60_000);
    expect(a.refused).toBeUndefined();
    room.decode = 1;
    admission.dispatch();
    expect(a.started).toBeUndefined();
  });

  test('the in-flight limit holds requests back as a stage would', () => {
    const { send, room } = setup({}, 1);
    room.prefill = room.decode = 10;
    const a = send('a');
    const b = send('b');
    expect(b.ticket.state).toBe('queued');
    a.end();
    expect(b.started).toBe('queued');
  });

  test('preemption off (the default): a higher class waits, nothing is cut', () => {
    const { send } = setup();
    const low = send('low', { classIndex: 1 }, { cuttable: true });
    send('high', { classIndex: 0 });
    expect(low.cut).toBe(false);
  });

  test('preemption: the newest cuttable request of the lowest class is cut once per waiting higher request', () => {
    const { send, room } = setup({ preemption: true, classes: [{ name: 'a' }, { name: 'b' }, { name: 'c' }] });
    room.decode = room.prefill = 3;
    const b = send('b', { classIndex: 1 }, { cuttable: true });
    const c0 = send('c0', { classIndex: 2 }, { cuttable: true });
    const c1 = send('c1', { classIndex: 2 }, { cuttable: true });
    const high = send('high', { classIndex: 0 });
    expect(high.ticket.state).toBe('queued');
    expect([b.cut, c0.cut, c1.cut]).toEqual([false, false, true]);
    // Its room is not back yet: a second waiting request cuts a second one, not the same again.
    send('high2', { classIndex: 0 });
    expect([b.cut, c0.cut, c1.cut]).toEqual([false, true, true]);
    c1.end();
    expect(high.started).toBe('queued');
  });

  test('preemption never cuts a request that has started answering', () => {
    const { send, room, admission } = setup({ preemption: true });
    let answered = false;
    const streaming = send('s', { classIndex: 1 }, { cuttable: true, answered: () => answered });
    answered = true;
    const told = send('t', { classIndex: 1 }, { cuttable: true });
    room.decode = 0;
    admission.answering(told.ticket);
    send('high', { classIndex: 0 });
    expect(streaming.cut).toBe(false);
    expect(told.cut).toBe(false);
  });

  test('close refuses every waiting request with 503 and takes no more', () => {
    const { send, room, admission, timers } = setup();
    room.decode = 0;
    const a = send('a');
    admission.close();
    expect(a.refused).toMatchObject({ reason: 'unavailable', status: 503 });
    expect(timers.pending).toBe(0);
    room.decode = 1;
    expect(send('b').refused?.reason).toBe('unavailable');
  });

  test('a start that throws gives its place back', () => {
    const { admission } = setup();
    const ticket = admission.enter(
      { tenant: 't', classIndex: 0, weight: 1, needsPrefill: true, bodyBytes: 1 },
      {
        start() {
          throw new Error('boom');
        },
        refuse() {},
      },
    );
    expect(ticket.state).toBe('done');
    expect(admission.inFlight).toBe(0);
  });
});
