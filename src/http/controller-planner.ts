/**
 * The controller API's part for moves between roles: `POST /v1/cluster/instances/{id}/role` (an
 * operator moves one instance now: the same drain and checks as the planner's moves; 202 when a move
 * starts, 200 when the instance already has that role and only its pin changed or nothing did; 409
 * while another move runs, when the instance is leaving or silent, or when its group would fall below
 * its minimum; 404 for an unknown instance), and the wire shape of the planner and the moves in
 * `GET /v1/cluster`. snake_case on the wire, epoch milliseconds as ISO times.
 */
import { Hono } from 'hono';
import type { Controller } from '../controller/controller.ts';
import type { RoleMove } from '../controller/planner/move.ts';
import type { MoveView } from '../controller/planner/moves.ts';
import type { PlannerView } from '../controller/planner/planner.ts';
import type { PlannerSettings } from '../controller/planner/settings.ts';
import { errors } from '../core/errors.ts';
import { SMALL_BODY_LIMIT_BYTES } from '../core/limits.ts';
import { InstanceIdParam, MoveRoleBody } from '../schema/controller-api.ts';
import { parseOrRefuse } from '../schema/issues.ts';
import { onError } from './envelope.ts';
import { jsonBody } from './json-body.ts';

/**
 * The move route (mount after the leader-only guard).
 * @example app.route('/', moveRoutes(controller));
 */
export function moveRoutes(controller: Controller): Hono {
  const app = new Hono();
  app.onError(onError);
  app.post('/v1/cluster/instances/:id/role', jsonBody(MoveRoleBody, { limitBytes: SMALL_BODY_LIMIT_BYTES, object: true }), (c) => {
    const id = parseOrRefuse(InstanceIdParam, c.req.param('id'), (issues) => errors.invalidArgument('id', issues[0]!.message));
    const body = c.req.valid('json');
    const start = controller.move(id, body.role, {
      by: 'operator',
      reason: `asked through POST /v1/cluster/instances/${id}/role`,
      ...(body.pin === undefined ? {} : { pin: body.pin }),
    });
    return c.json(
      { id, outcome: start.outcome, move: start.move === undefined ? null : moveWire(start.move) },
      start.outcome === 'started' ? 202 : 200,
    );
  });
  return app;
}

function iso(at: number | undefined): string | null {
  return at === undefined ? null : new Date(at).toISOString();
}

/**
 * A move (or an instance's move record) as the API shows it.
 * @example moveWire(controller.moves.current)
 */
export function moveWire(move: RoleMove | MoveView): Record<string, unknown> {
  return {
    ...('id' in move ? { id: move.id } : {}),
    seq: move.seq,
    from: move.from,
    to: move.to,
    group_id: move.group,
    phase: move.phase,
    by: move.by,
    reason: move.reason,
    pinned: move.pinned,
    started_at: iso(move.since),
    ended_at: iso(move.ended),
    ...('outcome' in move && move.outcome !== undefined ? { outcome: move.outcome } : {}),
  };
}

function settingsWire(s: PlannerSettings): Record<string, unknown> {
  return {
    interval_seconds: s.intervalMs / 1000,
    window_seconds: s.windowMs / 1000,
    cooldown_seconds: s.cooldownMs / 1000,
    margin: s.margin,
    min_prefill_per_group: s.minPrefillPerGroup,
    min_decode_per_group: s.minDecodePerGroup,
    move_timeout_seconds: s.moveTimeoutMs / 1000,
    load: { prefill_in_flight: s.load.prefillInFlight, decode_in_flight: s.load.decodeInFlight ?? null, usage: s.load.usage },
    sla:
      s.sla === undefined
        ? null
        : {
            ttft_ms: s.sla.ttftMs,
            tpot_ms: s.sla.tpotMs,
            profile: s.sla.profilePath,
            prefill_tokens_per_s: s.sla.capacity.prefillTokensPerS,
            decode_tokens_per_s: s.sla.capacity.decodeTokensPerS,
          },
  };
}

/**
 * The `planner` object of `GET /v1/cluster`: its mode and settings, each group's counts and last
 * decision, the move under way and the last moves.
 * @example plannerWire(planner.view(), controller.moves)
 */
export function plannerWire(view: PlannerView, moves: Controller['moves']): Record<string, unknown> {
  return {
    mode: view.settings.mode,
    acting: view.acting,
    settings: settingsWire(view.settings),
    groups: view.groups.map((g) => ({
      group_id: g.group,
      prefill: g.prefill,
      decode: g.decode,
      decision:
        g.decision === undefined
          ? null
          : {
              at: iso(g.decision.at),
              reason_code: g.decision.code,
              reason: g.decision.reason,
              pressure: g.decision.pressure ?? null,
              move: g.decision.move ?? null,
            },
    })),
    move: moves.current === undefined ? null : moveWire(moves.current),
    history: moves.history.map(moveWire),
  };
}
