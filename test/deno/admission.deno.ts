/**
 * Admission on Deno: the queue's policies in process (class order, equal shares for two tenants
 * offering 10:1, the byte bound shedding the lowest class, a client leaving), over the real KV
 * ledger; and a Coordinator on Deno whose saturated decode stage makes requests wait: a batch
 * request's wait runs out (429 with Retry-After), an interactive one is served once room returns.
 * The ledger is back to zero after each.
 */
import assert from 'node:assert/strict';
import { createAdmission, resolveAdmissionSettings, type AdmissionRequest, type AdmissionTicket } from '../../src/admission/index.ts';
import { KvLedger } from '../../src/ledger/index.ts';
import { TestCluster } from '../doubles/cluster.ts';
import { completion, denoCluster } from './support.ts';

Deno.test('admission in process: class order, fair shares, the byte bound, a client that leaves', () => {
  const cluster = new TestCluster([
    { id: 0, role: 'prefill', availSlots: 100, availBlocks: 1000 },
    { id: 1, role: 'decode', peers: [0], availSlots: 100, availBlocks: 1000 },
  ]);
  const ledger = new KvLedger({ cluster });
  const admission = createAdmission({
    settings: resolveAdmissionSettings({ decode: { max_in_flight_per_instance: 1 }, max_queued_bytes: 10_000, max_queued: 10_000 }),
    cluster,
    ledger,
    maxPerInstance: 1000,
    maxInFlight: 100,
  });
  let n = 0;
  const served: string[] = [];
  const refused: string[] = [];
  const send = (name: string, request: Partial<AdmissionRequest>): AdmissionTicket =>
    admission.enter(
      { tenant: name, classIndex: 0, weight: 1, needsPrefill: true, bodyBytes: 1, ...request },
      {
        start(_how, ticket) {
          const id = `r${n++}`;
          served.push(ticket.tenant);
          // The request reserves on its pair; its end gives the room back and lets the next one in.
          ledger.reserve({ requestId: id, p: 0, d: 1, pBlocks: 1, dBlocks: 1, phase: 'prefilling' });
          queueMicrotask(() => {
            ledger.complete(id);
            admission.leave(ticket);
          });
        },
        refuse() {
          refused.push(name);
        },
      },
    );
  // One room on D: the first runs, the rest wait.
  send('first', {});
  for (let round = 0; round < 30; round++) {
    for (let k = 0; k < 10; k++) send('flood', { classIndex: 1 });
    send('trickle', { classIndex: 1 });
  }
  send('interactive', { classIndex: 0 });
  // Shedding: a large interactive body past the byte bound sheds batch requests, never interactive ones.
  send('big', { classIndex: 0, bodyBytes: 9_700 });
  assert.ok(refused.length > 0 && refused.every((name) => name === 'flood' || name === 'trickle'));
  const gone = send('leaving', { classIndex: 1 });
  admission.cancel(gone);
  assert.equal(gone.state, 'done');
  return new Promise<void>((resolve) => {
    const check = (): void => {
      if (admission.queued > 0 || admission.inFlight > 0) {
        setTimeout(check, 1);
        return;
      }
      assert.deepEqual(served.slice(0, 3), ['first', 'interactive', 'big']);
      // While both waited, the trickle and the flood were served alike (within 10 %).
      const batch = served.slice(3, 3 + 2 * Math.min(served.filter((t) => t === 'trickle').length, 20));
      const trickle = batch.filter((t) => t === 'trickle').length;
      assert.ok(Math.abs(trickle - batch.length / 2) <= batch.length * 0.1, `trickle got ${trickle} of ${batch.length}`);
      assert.ok(!served.includes('leaving'));
      assert.deepEqual(ledger.totals().reservedSlots, 0);
      admission.close();
      ledger.close();
      resolve();
    };
    check();
  });
});

Deno.test('a Coordinator on Deno queues requests when its decode stage is saturated', async () => {
  const cluster = await denoCluster({
    coordinatorConfig: {
      pdlink: {
        admission: {
          classes: [
            { name: 'interactive', queue_timeout_ms: 60_000 },
            { name: 'batch', queue_timeout_ms: 100 },
          ],
          retry_after_seconds: 3,
          decode: { max_in_flight_per_instance: 1 },
        },
      },
    },
  });
  try {
    const url = `${cluster.proxyUrl}/v1/completions`;
    const cut = new AbortController();
    const long = await fetch(url, { ...completion('hold the decoder', { stream: true, max_tokens: 3000 }), signal: cut.signal });
    assert.equal(long.status, 200);
    const reader = long.body!.getReader();
    await reader.read();
    // D is full: a batch request waits its 100 ms and is refused, in OpenAI's shape.
    const batch = await fetch(url, {
      ...completion('batch'),
      headers: { 'content-type': 'application/json', 'x-pdlink-priority': 'batch' },
    });
    assert.equal(batch.status, 429);
    assert.equal(batch.headers.get('retry-after'), '3');
    assert.equal(((await batch.json()) as { error: { code: string } }).error.code, 'queue_timeout');
    // An interactive request waits until the decoder is free again.
    const waiting = fetch(url, completion('interactive'));
    const metrics = async (): Promise<string> => (await fetch(`${cluster.coordinatorUrl}/metrics`)).text();
    for (let i = 0; i < 500 && !/pdlink_admission_queued\{class="interactive"[^}]*\} 1/.test(await metrics()); i++) {
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    assert.match(await metrics(), /pdlink_admission_queued\{class="interactive"[^}]*\} 1/);
    cut.abort();
    await reader.cancel().catch(() => {});
    const served = await waiting;
    assert.equal(served.status, 200);
    await served.text();
    const ledger = (await (await fetch(`${cluster.coordinatorUrl}/v1/transfers`)).json()) as {
      totals: { active: number; reserved_slots: number };
    };
    assert.deepEqual([ledger.totals.active, ledger.totals.reserved_slots], [0, 0]);
  } finally {
    await cluster.stop();
  }
});
