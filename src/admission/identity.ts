/**
 * Who a request is: its tenant (whom fair sharing and the metrics count it against) and its
 * priority class. The tenant is what a gateway embedding pdlink says, else the name of the API key
 * the request was accepted with, else (keys off) the tenant header, else the client's address. The
 * class is what a gateway says, else the class header bounded by what the tenant may ask for, else
 * the tenant's own class. A client can lower its class freely but never raise it past its bound,
 * and with API keys on it cannot pick its tenant.
 */
import { errors, PdlinkError } from '../core/errors.ts';
import { ADMISSION_NAME } from '../schema/admission-config.ts';
import type { AdmissionSettings, TenantPolicy } from './settings.ts';

/** What a gateway may say of a request (the plugin API's `identify` hook). */
export interface SuppliedIdentity {
  readonly tenant?: string;
  /** A class name of the configuration; trusted as given (no bound applies). */
  readonly priority?: string;
}

/** What identification reads of one request. */
export interface IdentitySources {
  readonly supplied?: SuppliedIdentity | undefined;
  /** The tenant of the API key the request was accepted with; undefined when keys are off. */
  readonly keyTenant?: string | undefined;
  /** A request header, by lower-case name. */
  readonly header: (name: string) => string | null;
  /** The client's address, when the listener knows it (asked only when nothing else names the tenant). */
  readonly address?: (() => string | undefined) | undefined;
}

export interface Identity {
  readonly tenant: string;
  readonly classIndex: number;
  readonly policy: TenantPolicy;
}

/**
 * The tenant and class of a request, or the 400 naming the header that was wrong.
 * @example const who = identify(settings, { header: (n) => request.headers.get(n), address: '10.0.0.7' });
 */
export function identify(settings: AdmissionSettings, sources: IdentitySources): Identity | PdlinkError {
  const { supplied } = sources;
  let tenant = supplied?.tenant ?? sources.keyTenant;
  if (tenant === undefined) {
    const named = sources.header(settings.tenantHeader);
    if (named !== null) {
      if (!ADMISSION_NAME.test(named))
        return headerError(settings.tenantHeader, 'must be 1 to 64 of A-Z a-z 0-9 . _ : - (a letter or digit first)');
      tenant = named;
    } else {
      const address = sources.address?.();
      tenant = address === undefined ? 'unknown' : `ip:${address}`;
    }
  }
  const policy = settings.tenants.get(tenant) ?? settings.defaultTenant;
  const asked = supplied?.priority;
  if (asked !== undefined) {
    const index = classIndexOf(settings, asked);
    if (index < 0)
      return errors.configInvalid([{ path: 'identify().priority', message: `names no class (${classList(settings)})` }], 'admission');
    return { tenant, classIndex: index, policy };
  }
  const header = sources.header(settings.classHeader);
  if (header === null) return { tenant, classIndex: policy.classIndex, policy };
  const index = classIndexOf(settings, header.trim());
  if (index < 0) return headerError(settings.classHeader, `must be one of ${classList(settings)}`);
  // A lower index is a higher class: asking above the tenant's bound gets the bound.
  return { tenant, classIndex: Math.max(index, policy.maxClassIndex), policy };
}

function classIndexOf(settings: AdmissionSettings, name: string): number {
  return settings.classes.findIndex((c) => c.name === name);
}

function classList(settings: AdmissionSettings): string {
  return settings.classes.map((c) => c.name).join(', ');
}

function headerError(name: string, message: string): PdlinkError {
  return errors.badRequest(`${name}: ${message}`, [{ path: name, message }]);
}
