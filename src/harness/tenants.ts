/**
 * Tenants and priority classes in a benchmark's workload (`--tenants`), so a run can show what one
 * tenant feels while another floods the cluster: each request carries a tenant and a class, sent as
 * pdlink's `x-pdlink-tenant` and `x-pdlink-priority` headers, and the report summarises each tenant
 * apart. A synthetic workload gives every tenant its own Poisson stream at its own rate; a trace's
 * requests are dealt to the tenants in proportion to their rates, by a seeded draw.
 */
import { Random } from './random.ts';
import { syntheticWorkload, type SyntheticSettings } from './synthetic.ts';
import type { WorkItem, Workload } from './workload.ts';

export const TENANT_HEADER = 'x-pdlink-tenant';
export const PRIORITY_HEADER = 'x-pdlink-priority';

export interface TenantMix {
  readonly name: string;
  /** The class asked for (pdlink's class header). */
  readonly priority: string;
  /** Arrivals per second (synthetic); a trace's requests are shared in proportion to it. */
  readonly rate: number;
}

const NAME = /^[A-Za-z0-9][A-Za-z0-9._:-]{0,63}$/;

/**
 * Parses `NAME:CLASS:RATE[,NAME:CLASS:RATE...]`; throws an Error saying what is wrong.
 * @example parseTenants('chat:interactive:1,bulk:batch:25')
 */
export function parseTenants(text: string): TenantMix[] {
  const mixes = text.split(',').map((part, i): TenantMix => {
    const fields = part.trim().split(':');
    const [name = '', priority = '', rateText = ''] = fields;
    const rate = Number(rateText);
    if (fields.length !== 3 || !NAME.test(name) || !NAME.test(priority) || rateText.trim() === '' || !Number.isFinite(rate) || rate <= 0)
      throw new Error(`entry ${i + 1} (${JSON.stringify(part)}) must be NAME:CLASS:RATE with RATE > 0 requests per second`);
    return { name, priority, rate };
  });
  const names = new Set(mixes.map((m) => m.name));
  if (names.size !== mixes.length) throw new Error('a tenant is named twice');
  return mixes;
}

/**
 * A synthetic workload of `settings.requests` requests over the tenants, each its own Poisson stream
 * at its own rate (its share of the requests is its share of the total rate), merged by arrival.
 * @example tenantSynthetic(settings, parseTenants('chat:interactive:1,bulk:batch:5'))
 */
export function tenantSynthetic(settings: SyntheticSettings, tenants: readonly TenantMix[]): Workload {
  const total = tenants.reduce((sum, t) => sum + t.rate, 0);
  const items: WorkItem[] = [];
  tenants.forEach((tenant, i) => {
    const requests = Math.max(1, Math.round((settings.requests * tenant.rate) / total));
    const own = syntheticWorkload({ ...settings, requests, rate: tenant.rate, seed: settings.seed + 7919 * (i + 1) });
    for (const item of own.items) items.push({ ...item, tenant: tenant.name, priority: tenant.priority });
  });
  items.sort((a, b) => a.arrivalMs - b.arrivalMs);
  return {
    kind: 'synthetic',
    source: `synthetic over tenants ${describe(tenants)}: ${items.length} requests, prefix share ${settings.prefixShare} over ${settings.prefixGroups} groups, seed ${settings.seed}`,
    blockTokens: settings.blockTokens,
    items: items.map((item, index) => ({ ...item, index })),
  };
}

/**
 * A workload's requests dealt to the tenants in proportion to their rates (seeded).
 * @example withTenants(parseTrace(text, file, scaling), parseTenants('a:interactive:1,b:batch:3'), 1)
 */
export function withTenants(workload: Workload, tenants: readonly TenantMix[], seed: number): Workload {
  const random = new Random(seed);
  const total = tenants.reduce((sum, t) => sum + t.rate, 0);
  const items = workload.items.map((item): WorkItem => {
    let draw = random.next() * total;
    const tenant = tenants.find((t) => (draw -= t.rate) < 0) ?? tenants.at(-1)!;
    return { ...item, tenant: tenant.name, priority: tenant.priority };
  });
  return { ...workload, source: `${workload.source}; tenants ${describe(tenants)}`, items };
}

function describe(tenants: readonly TenantMix[]): string {
  return tenants.map((t) => `${t.name} (${t.priority}, ${t.rate}/s)`).join(', ');
}
