import { afterEach, describe, expect, test } from 'bun:test';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { createCoordinator, type Coordinator } from './coordinator.ts';
import { parseRefresh } from '../schema/refresh.ts';

const seed = readFileSync(join(import.meta.dir, '..', '..', 'test', 'fixtures', 'seed-refresh.json'), 'utf8');

let coordinator: Coordinator | undefined;
afterEach(async () => {
  await coordinator?.close();
  coordinator = undefined;
});

describe('createCoordinator wires the breaker and cap settings', () => {
  test('circuitCooldownMs is the circuits’ cool-down', async () => {
    coordinator = createCoordinator({ circuitCooldownMs: 20 });
    for (let i = 0; i < 5; i++) coordinator.health.recordFailure(7);
    expect(coordinator.health.state(7)).toBe('open');
    // A bounded poll, not a timing assertion: with the default 30 s this would never turn.
    const deadline = Date.now() + 4_000;
    while (coordinator.health.state(7) === 'open' && Date.now() < deadline) await new Promise((r) => setTimeout(r, 5));
    expect(coordinator.health.state(7)).toBe('half_open');
  });

  test('maxRequestsPerInstance caps the requests held on an instance', () => {
    coordinator = createCoordinator({ maxRequestsPerInstance: 1 });
    coordinator.registry.apply(parseRefresh(JSON.parse(seed)));
    expect(coordinator.scheduler.pick().ok).toBe(true);
    coordinator.ledger.reserve({ requestId: 'held', p: 0, d: 1, pBlocks: 1, dBlocks: 1 });
    const refused = coordinator.scheduler.pick();
    expect(refused.ok ? 'a pair' : refused.reason).toBe('instance_cap');
  });

  test('an unchanged refresh gives an open instance its trial', () => {
    coordinator = createCoordinator();
    coordinator.registry.apply(parseRefresh(JSON.parse(seed)));
    for (let i = 0; i < 5; i++) coordinator.health.recordFailure(1);
    expect(coordinator.health.state(1)).toBe('open');
    coordinator.registry.apply(parseRefresh(JSON.parse(seed)));
    expect(coordinator.health.state(1)).toBe('half_open');
  });
});

describe('createCoordinator follows the links the registry reports', () => {
  test('a decode instance that stops listing a prefill peer releases the reservations on that pair', () => {
    coordinator = createCoordinator();
    coordinator.registry.apply(parseRefresh(JSON.parse(seed)));
    coordinator.ledger.reserve({ requestId: 'on-link', p: 0, d: 1, pBlocks: 1, dBlocks: 1 });
    coordinator.registry.apply(parseRefresh(JSON.parse(seed)));
    expect(coordinator.ledger.isActive('on-link')).toBe(true);
    const unlinked = JSON.parse(seed) as { instances: { dynamic_info: { peers?: number[] } }[] };
    unlinked.instances[1]!.dynamic_info.peers = [];
    coordinator.registry.apply(parseRefresh(unlinked));
    expect(coordinator.ledger.get('on-link')).toMatchObject({ state: 'released', code: 'unlink' });
    expect(coordinator.ledger.instanceLoad(0)).toMatchObject({ reservedSlots: 0, reservedBlocks: 0 });
  });
});
