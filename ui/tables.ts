/**
 * The tables under the graph: instances, links, admission's queue (on a Coordinator with admission)
 * and recent failures. Every row carries its id and
 * state as data attributes, so what the graph draws on a canvas is also readable in the DOM.
 */
import type { DashboardState } from '../src/http/dashboard-state.ts';

/** Replaces the rows of a table body. */
function fill(table: HTMLElement, rows: readonly { attrs: Record<string, string>; cells: readonly string[]; errorCell?: number }[]): void {
  const body = table.querySelector('tbody')!;
  body.replaceChildren(
    ...rows.map((row) => {
      const tr = document.createElement('tr');
      for (const [k, v] of Object.entries(row.attrs)) tr.setAttribute(`data-${k}`, v);
      row.cells.forEach((text, index) => {
        const td = document.createElement('td');
        td.textContent = text;
        if (index === row.errorCell) td.className = 'error';
        tr.append(td);
      });
      return tr;
    }),
  );
}

const pair = (x: { free: number; total: number } | null): string => (x === null ? '–' : `${x.free} / ${x.total}`);
const time = (at: number): string => new Date(at).toLocaleTimeString();

export function renderTables(state: DashboardState): void {
  fill(
    document.getElementById('instances')!,
    state.instances.map((i) => ({
      attrs: {
        'instance-id': String(i.id),
        state: i.state,
        role: i.role,
        circuit: i.circuit,
        ...(i.lastError === null ? {} : { error: i.lastError.message }),
      },
      cells: [
        String(i.id),
        i.role,
        String(i.group),
        i.address,
        i.state,
        pair(i.slots),
        pair(i.blocks),
        String(i.inFlight),
        i.circuit,
        i.lastError === null ? '' : `${time(i.lastError.at)} ${i.lastError.message}`,
      ],
      errorCell: 9,
    })),
  );
  fill(
    document.getElementById('links')!,
    state.links.map((l) => ({
      attrs: { link: `${l.p}-${l.d}`, state: l.state },
      cells: [String(l.p), String(l.d), l.state, l.code ?? ''],
      errorCell: 3,
    })),
  );
  renderAdmission(state);
  renderKvEvents(state);
  fill(
    document.getElementById('failures')!,
    state.failures.map((f) => ({
      attrs: { subject: f.subject },
      cells: [time(f.at), f.subject, f.instances.join(', '), f.reason],
      errorCell: 3,
    })),
  );
}

/** The engines' KV-event streams: one row per instance and DP rank, with every reset, gap and skipped batch; hidden where there are none. */
function renderKvEvents(state: DashboardState): void {
  const panel = document.getElementById('kv-events-panel')!;
  const kv = state.kvEvents;
  panel.hidden = kv === null;
  if (kv === null) return;
  document.getElementById('kv-events-summary')!.textContent =
    `· ${kv.heldBlocks} blocks held in the index (${Math.round(kv.bytes / 1024)} KiB)` +
    (kv.problems.length === 0 ? '' : ` · not followed: ${kv.problems.map((p) => `${p.instance} (${p.reason})`).join('; ')}`);
  fill(
    document.getElementById('kv-events')!,
    kv.streams.map((s) => ({
      attrs: { instance: s.instance, connected: String(s.connected) },
      cells: [
        `${s.instance}:${s.dpRank}`,
        s.endpoint,
        s.connected ? 'connected' : 'reconnecting',
        s.lastSeq ?? '–',
        `${s.applied} + ${s.replayed} replayed`,
        String(s.gaps),
        `restart ${s.resets.restart}, gap ${s.resets.gap_unfilled}, cleared ${s.resets.cleared}`,
        `${s.skipped} batches, ${s.orphans} orphan blocks`,
        s.lastError ?? '',
      ],
      errorCell: 8,
    })),
  );
}

/** Admission's queue by class, highest first, and each stage's room; hidden where there is no admission. */
function renderAdmission(state: DashboardState): void {
  const panel = document.getElementById('admission-panel')!;
  const admission = state.admission;
  panel.hidden = admission === null;
  if (admission === null) return;
  const { prefill, decode } = admission.stages;
  document.getElementById('admission-summary')!.textContent =
    `· ${admission.inFlight} running, ${admission.queued} waiting (${admission.queuedBytes} B) · ` +
    `room: prefill ${prefill.room} (${prefill.inFlight} prefilling on ${prefill.instances} P), decode ${decode.room} (${decode.inFlight} on ${decode.instances} D)`;
  fill(
    document.getElementById('admission')!,
    admission.classes.map((c) => ({
      attrs: { class: c.name, queued: String(c.queued) },
      cells: [
        c.name,
        String(c.queued),
        String(c.running),
        `${c.queueTimeoutMs} ms`,
        c.tenants.map((t) => `${t.tenant} ${t.queued}`).join(', '),
      ],
    })),
  );
}
