/**
 * Admission: the one place that decides when a request may start. A request that finds room (on
 * the stages it needs, and within the in-flight limit) and nobody of its class or a higher one
 * waiting starts at once; otherwise it waits in its class's queue, up to the class's timeout, and
 * is refused with a status and `Retry-After` when the wait runs out. Room coming back (a request
 * ending, a refresh) starts the next waiting request: higher classes strictly first, tenants within
 * a class by weighted fair queuing. The queue is bounded in requests and in body bytes; past the
 * bound a waiting request of the lowest class below the newcomer's is shed first. Optionally, a
 * request that must wait may cut an admitted request of a lower class that has sent nothing yet.
 *
 * It knows no HTTP: the caller hands each request's start and refusal as callbacks, and the scheduler
 * still picks the pair once a request has started (DESIGN §7: admission owns the queue, the
 * scheduler stays a pick).
 */
import { FairQueue } from './fair-queue.ts';
import type { AdmissionMetrics } from './metrics.ts';
import type { AdmissionSettings } from './settings.ts';
import type { StageLoad } from './stage-room.ts';
import { refusalOf } from './refusals.ts';
import type { AdmissionRequest, AdmissionSnapshot, AdmissionTicket, AdmittedHow, RefusalReason, TicketHandlers } from './types.ts';

/** What admission asks of the stages (StageRoom fits). */
export interface RoomView {
  fits(needsPrefill: boolean): boolean;
  servable(needsPrefill: boolean): boolean;
  loads(): { readonly prefill: StageLoad; readonly decode: StageLoad };
}

/** Admission's clock and its one timer per class (injected in tests). */
export interface AdmissionTimers {
  now(): number;
  set(callback: () => void, ms: number): unknown;
  clear(handle: unknown): void;
}

export const SYSTEM_TIMERS: AdmissionTimers = {
  now: () => performance.now(),
  set(callback, ms) {
    const timer = setTimeout(callback, ms);
    // A waiting request's timer must never keep a process alive on its own.
    (timer as { unref?: () => void }).unref?.();
    return timer;
  },
  clear: (handle) => clearTimeout(handle as ReturnType<typeof setTimeout>),
};

export interface AdmissionOptions {
  readonly settings: AdmissionSettings;
  readonly room: RoomView;
  /** Requests started and not yet ended, at most (`request_limit.max_requests`). */
  readonly maxInFlight: number;
  readonly metrics?: AdmissionMetrics;
  readonly timers?: AdmissionTimers;
}

/** One class's waiting requests: fair lines by tenant, arrival order for the timeouts, cuttable running requests. */
interface ClassQueue {
  readonly fair: FairQueue<AdmissionTicket>;
  readonly byArrival: AdmissionTicket[];
  arrivalHead: number;
  timer: unknown;
  timerAt: number;
  running: number;
  /** Newest last: the request cut first wasted the least work. */
  cuttableTail: AdmissionTicket | undefined;
}

export class Admission {
  readonly settings: AdmissionSettings;
  readonly #room: RoomView;
  readonly #maxInFlight: number;
  readonly #metrics: AdmissionMetrics | undefined;
  readonly #timers: AdmissionTimers;
  readonly #classes: ClassQueue[];
  #inFlight = 0;
  #queued = 0;
  #queuedBytes = 0;
  /** Requests cut whose room has not come back yet: one cut per waiting request of a higher class. */
  #cutsPending = 0;
  #dispatching = false;
  #again = false;
  #closed = false;

  /** @example const admission = new Admission({ settings, room, maxInFlight: 10_000 }); */
  constructor(options: AdmissionOptions) {
    this.settings = options.settings;
    this.#room = options.room;
    this.#maxInFlight = options.maxInFlight;
    this.#metrics = options.metrics;
    this.#timers = options.timers ?? SYSTEM_TIMERS;
    this.#classes = options.settings.classes.map(() => ({
      fair: new FairQueue<AdmissionTicket>(),
      byArrival: [],
      arrivalHead: 0,
      timer: undefined,
      timerAt: Infinity,
      running: 0,
      cuttableTail: undefined,
    }));
  }

  /** Requests started and not yet ended. */
  get inFlight(): number {
    return this.#inFlight;
  }

  /** Requests waiting. */
  get queued(): number {
    return this.#queued;
  }

  /**
   * Takes a request in: it starts now, waits, or is refused now (through `handlers`, synchronously
   * for the first and the last). Returns its ticket, for `cancel`, `answering` and `leave`.
   * @example const ticket = admission.enter({ tenant, classIndex, weight, needsPrefill: true, bodyBytes }, { start, refuse });
   */
  enter(request: AdmissionRequest, handlers: TicketHandlers): AdmissionTicket {
    const ticket: AdmissionTicket = {
      ...request,
      state: 'new',
      arrivedAt: this.#timers.now(),
      deadline: Infinity,
      handlers,
      preempted: false,
      waiting: false,
      prev: undefined,
      next: undefined,
      cuttable: false,
    };
    if (this.#closed || !this.#room.servable(request.needsPrefill)) {
      this.#refuse(ticket, 'unavailable');
      return ticket;
    }
    if (!this.#aheadOf(request.classIndex) && this.#hasRoom(request.needsPrefill)) {
      this.#start(ticket, 'immediate');
      return ticket;
    }
    const policy = this.settings.classes[request.classIndex]!;
    if (policy.queueTimeoutMs === 0) {
      this.#refuse(ticket, 'timeout');
      return ticket;
    }
    if (!this.#makeRoomInQueue(ticket)) {
      this.#refuse(ticket, 'queue_full');
      return ticket;
    }
    this.#enqueue(ticket, policy.queueTimeoutMs);
    if (this.settings.preemption) this.#cutForWaiting(request.classIndex);
    return ticket;
  }

  /**
   * The client of a waiting request left: it gives up its place and its body. No-op otherwise.
   * @example request.signal.addEventListener('abort', () => admission.cancel(ticket));
   */
  cancel(ticket: AdmissionTicket): void {
    if (ticket.state !== 'queued') return;
    this.#dequeue(ticket);
    ticket.state = 'done';
    ticket.handlers = undefined;
    this.#metrics?.cancelled(ticket.classIndex, ticket.tenant);
  }

  /**
   * The admitted request started answering its client: it can no longer be cut.
   * @example admission.answering(ticket);
   */
  answering(ticket: AdmissionTicket): void {
    this.#uncut(ticket);
  }

  /**
   * The admitted request ended: its in-flight place goes to the next waiting request.
   * @example exchange.onEnd = () => admission.leave(ticket);
   */
  leave(ticket: AdmissionTicket): void {
    if (ticket.state !== 'running') return;
    ticket.state = 'done';
    ticket.handlers = undefined;
    this.#uncut(ticket);
    this.#classes[ticket.classIndex]!.running--;
    this.#inFlight--;
    if (ticket.preempted) this.#cutsPending = Math.max(0, this.#cutsPending - 1);
    this.dispatch();
  }

  /**
   * Starts waiting requests while there is room, highest class first; re-entrant calls loop, not recurse.
   * @example room.onMore = () => admission.dispatch();
   */
  dispatch(): void {
    if (this.#queued === 0) return;
    if (this.#dispatching) {
      this.#again = true;
      return;
    }
    this.#dispatching = true;
    try {
      do {
        this.#again = false;
        while (this.#queued > 0 && this.#inFlight < this.#maxInFlight) {
          const queue = this.#nextQueue();
          const next = queue?.fair.peek();
          if (next === undefined || !this.#room.fits(next.needsPrefill)) break;
          // Served, not removed: the fair queue's virtual time moves on.
          queue!.fair.pop();
          this.#forgetQueued(next);
          this.#start(next, 'queued');
        }
      } while (this.#again);
    } finally {
      this.#dispatching = false;
    }
  }

  /**
   * What waits and runs now, and each stage's room.
   * @example admission.snapshot().classes[0].queued
   */
  snapshot(): AdmissionSnapshot {
    return {
      enabled: this.settings.enabled,
      inFlight: this.#inFlight,
      queued: this.#queued,
      queuedBytes: this.#queuedBytes,
      classes: this.settings.classes.map((policy, i) => {
        const queue = this.#classes[i]!;
        const tenants = [...queue.fair.tenants()].map(([tenant, queued]) => ({ tenant, queued })).sort((a, b) => b.queued - a.queued);
        return { name: policy.name, queued: queue.fair.size, running: queue.running, queueTimeoutMs: policy.queueTimeoutMs, tenants };
      }),
      stages: this.#room.loads(),
    };
  }

  /** Refuses every waiting request (503) and takes no more; running ones finish. Idempotent. */
  close(): void {
    this.#closed = true;
    for (const queue of this.#classes) {
      this.#timers.clear(queue.timer);
      queue.timer = undefined;
      for (let t = queue.fair.pop(); t !== undefined; t = queue.fair.pop()) {
        this.#forgetQueued(t);
        this.#refuse(t, 'unavailable');
      }
      queue.byArrival.length = 0;
      queue.arrivalHead = 0;
    }
  }

  #hasRoom(needsPrefill: boolean): boolean {
    return this.#inFlight < this.#maxInFlight && this.#room.fits(needsPrefill);
  }

  /** Whether a request of `classIndex` or higher waits: a newcomer queues behind it. */
  #aheadOf(classIndex: number): boolean {
    if (this.#queued === 0) return false;
    for (let c = 0; c <= classIndex; c++) if (this.#classes[c]!.fair.size > 0) return true;
    return false;
  }

  /** The highest class with a request waiting. */
  #nextQueue(): ClassQueue | undefined {
    for (const queue of this.#classes) if (queue.fair.size > 0) return queue;
    return undefined;
  }

  #start(ticket: AdmissionTicket, how: AdmittedHow): void {
    const handlers = ticket.handlers!;
    ticket.state = 'running';
    this.#inFlight++;
    const queue = this.#classes[ticket.classIndex]!;
    queue.running++;
    if (this.settings.preemption && handlers.preempt !== undefined) {
      ticket.cuttable = true;
      ticket.prev = queue.cuttableTail;
      if (queue.cuttableTail !== undefined) queue.cuttableTail.next = ticket;
      queue.cuttableTail = ticket;
    }
    const wait = how === 'immediate' ? 0 : Math.max(0, this.#timers.now() - ticket.arrivedAt) / 1000;
    this.#metrics?.admitted(ticket.classIndex, ticket.tenant, how, wait);
    try {
      handlers.start(how, ticket);
    } catch (err) {
      console.error('pdlink: admission: a request failed to start', err);
      this.leave(ticket);
    }
  }

  #refuse(ticket: AdmissionTicket, reason: RefusalReason): void {
    const handlers = ticket.handlers;
    ticket.state = 'done';
    ticket.handlers = undefined;
    this.#metrics?.refused(ticket.classIndex, ticket.tenant, reason);
    handlers?.refuse(
      refusalOf(reason, {
        settings: this.settings,
        classIndex: ticket.classIndex,
        servable: this.#room.servable(ticket.needsPrefill),
        closing: this.#closed,
      }),
    );
  }

  /** Sheds waiting requests of classes below the newcomer's until it fits; false when it cannot. */
  #makeRoomInQueue(ticket: AdmissionTicket): boolean {
    const { maxQueued, maxQueuedBytes } = this.settings;
    if (ticket.bodyBytes > maxQueuedBytes || maxQueued === 0) return false;
    while (this.#queued + 1 > maxQueued || this.#queuedBytes + ticket.bodyBytes > maxQueuedBytes) {
      let victim: AdmissionTicket | undefined;
      for (let c = this.#classes.length - 1; c > ticket.classIndex && victim === undefined; c--) {
        victim = this.#classes[c]!.fair.newestOfLongest();
      }
      if (victim === undefined) return false;
      this.#dequeue(victim);
      this.#refuse(victim, 'shed');
    }
    return true;
  }

  #enqueue(ticket: AdmissionTicket, timeoutMs: number): void {
    const queue = this.#classes[ticket.classIndex]!;
    ticket.state = 'queued';
    ticket.deadline = ticket.arrivedAt + timeoutMs;
    queue.fair.push(ticket.tenant, ticket.weight, ticket);
    queue.byArrival.push(ticket);
    this.#queued++;
    this.#queuedBytes += ticket.bodyBytes;
    if (queue.timer === undefined) this.#arm(ticket.classIndex, ticket.deadline);
  }

  #dequeue(ticket: AdmissionTicket): void {
    this.#classes[ticket.classIndex]!.fair.remove(ticket.tenant, ticket);
    this.#forgetQueued(ticket);
  }

  #forgetQueued(ticket: AdmissionTicket): void {
    this.#queued--;
    this.#queuedBytes -= ticket.bodyBytes;
    const queue = this.#classes[ticket.classIndex]!;
    if (queue.fair.size > 0) return;
    // Nobody of the class waits: its arrival line (served and cancelled ones stay there until their deadline) and timer go.
    queue.byArrival.length = 0;
    queue.arrivalHead = 0;
    this.#timers.clear(queue.timer);
    queue.timer = undefined;
  }

  /** One timer per class: waits in a class are equally long, so they end in arrival order. */
  #arm(classIndex: number, at: number): void {
    const queue = this.#classes[classIndex]!;
    queue.timerAt = at;
    queue.timer = this.#timers.set(() => this.#expire(classIndex), Math.max(0, Math.ceil(at - this.#timers.now())));
  }

  #expire(classIndex: number): void {
    const queue = this.#classes[classIndex]!;
    queue.timer = undefined;
    const now = this.#timers.now();
    const line = queue.byArrival;
    while (queue.arrivalHead < line.length) {
      const ticket = line[queue.arrivalHead]!;
      if (ticket.state === 'queued' && ticket.deadline > now) break;
      queue.arrivalHead++;
      if (ticket.state !== 'queued') continue;
      this.#dequeue(ticket);
      this.#refuse(ticket, 'timeout');
    }
    if (queue.arrivalHead === line.length) {
      line.length = 0;
      queue.arrivalHead = 0;
    } else {
      if (queue.arrivalHead > 64 && queue.arrivalHead * 2 > line.length) {
        line.splice(0, queue.arrivalHead);
        queue.arrivalHead = 0;
      }
      this.#arm(classIndex, line[queue.arrivalHead]!.deadline);
    }
  }

  /** Cuts the newest cuttable request of the lowest class below `classIndex`, one per waiting request above it. */
  #cutForWaiting(classIndex: number): void {
    let waitingAbove = 0;
    for (let c = 0; c <= classIndex; c++) waitingAbove += this.#classes[c]!.fair.size;
    while (this.#cutsPending < waitingAbove) {
      let victim: AdmissionTicket | undefined;
      for (let c = this.#classes.length - 1; c > classIndex && victim === undefined; c--) victim = this.#classes[c]!.cuttableTail;
      if (victim === undefined) return;
      this.#uncut(victim);
      if (victim.handlers?.preempt?.() === true) {
        victim.preempted = true;
        this.#cutsPending++;
        this.#metrics?.refused(victim.classIndex, victim.tenant, 'preempted');
      }
    }
  }

  #uncut(ticket: AdmissionTicket): void {
    if (!ticket.cuttable) return;
    ticket.cuttable = false;
    const queue = this.#classes[ticket.classIndex]!;
    if (ticket.prev !== undefined) ticket.prev.next = ticket.next;
    if (ticket.next !== undefined) ticket.next.prev = ticket.prev;
    else queue.cuttableTail = ticket.prev;
    ticket.prev = undefined;
    ticket.next = undefined;
  }
}
