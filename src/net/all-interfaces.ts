/**
 * Whether a listener address means "every interface". Binding one exposes a management API to
 * the whole network, so pdlink refuses it unless the configuration file allows it; the check has
 * to recognise every spelling the OS accepts for the unspecified address (`0`, `0.0.0.0`,
 * `000.0.0.0`, `::`, `[::]`, `0:0:0:0:0:0:0:0`, the IPv4-mapped `::ffff:0.0.0.0` / `::ffff:0:0`,
 * the IPv4-compatible `::0.0.0.0`, zone ids), not only the two canonical ones.
 */
import { ConfigError } from '../core/errors.ts';

/**
 * True when `host` binds every interface (IPv4 0.0.0.0 or IPv6 ::, in any spelling).
 * @example isAllInterfaces('::ffff:0.0.0.0') // true
 */
export function isAllInterfaces(host: string): boolean {
  let text = host.trim();
  if (text.startsWith('[') && text.endsWith(']')) text = text.slice(1, -1);
  const zone = text.indexOf('%');
  if (zone >= 0) text = text.slice(0, zone);
  // A listener given no host at all binds every interface too.
  if (text === '') return true;
  if (text.includes(':')) {
    const groups = ipv6Groups(text);
    if (groups === undefined) return false;
    const head = groups.slice(0, 5).every((g) => g === 0);
    const tail = groups[6] === 0 && groups[7] === 0;
    // ::, ::0.0.0.0 (IPv4-compatible) and ::ffff:0.0.0.0 (IPv4-mapped) all end up on 0.0.0.0.
    return head && tail && (groups[5] === 0 || groups[5] === 0xffff);
  }
  return ipv4Value(text) === 0;
}

/** inet_aton's reading of an IPv4 address: 1 to 4 parts, each decimal, octal (0…) or hex (0x…). */
function ipv4Value(text: string): number | undefined {
  const parts = text.split('.');
  if (parts.length < 1 || parts.length > 4) return undefined;
  let value = 0;
  for (const part of parts) {
    const n = numberPart(part);
    if (n === undefined) return undefined;
    value += n;
  }
  return value;
}

function numberPart(part: string): number | undefined {
  if (/^0x[0-9a-f]+$/i.test(part)) return parseInt(part.slice(2), 16);
  if (/^0[0-7]*$/.test(part)) return parseInt(part, 8);
  if (/^[1-9][0-9]*$/.test(part)) return parseInt(part, 10);
  return undefined;
}

/** The eight 16-bit groups of an IPv6 address, a dotted IPv4 tail counting as two; undefined if malformed. */
function ipv6Groups(text: string): number[] | undefined {
  const halves = text.split('::');
  if (halves.length > 2) return undefined;
  const parse = (half: string): number[] | undefined => {
    if (half === '') return [];
    const out: number[] = [];
    const fields = half.split(':');
    for (const [i, field] of fields.entries()) {
      if (field.includes('.') && i === fields.length - 1) {
        const v4 = ipv4Dotted(field);
        if (v4 === undefined) return undefined;
        out.push(v4 >>> 16, v4 & 0xffff);
      } else if (/^[0-9a-f]{1,4}$/i.test(field) || /^0+$/.test(field)) {
        out.push(parseInt(field, 16));
      } else {
        return undefined;
      }
    }
    return out;
  };
  const left = parse(halves[0]!);
  const right = halves.length === 2 ? parse(halves[1]!) : [];
  if (left === undefined || right === undefined) return undefined;
  if (halves.length === 1) return left.length === 8 ? left : undefined;
  const missing = 8 - left.length - right.length;
  if (missing < 1) return undefined;
  return [...left, ...new Array<number>(missing).fill(0), ...right];
}

function ipv4Dotted(text: string): number | undefined {
  const parts = text.split('.');
  if (parts.length !== 4 || !parts.every((p) => /^\d{1,3}$/.test(p) && Number(p) <= 255)) return undefined;
  return parts.reduce((acc, p) => acc * 256 + Number(p), 0);
}

/**
 * Refuses a listener address meaning every interface unless the configuration allows it.
 * @throws ConfigError naming `key` and the setting that allows it.
 * @example refuseAllInterfaces('manage_ip', settings.manage.ip, false, 'http_config.allow_all_zero_ip_listening');
 */
export function refuseAllInterfaces(key: string, host: string, allowed: boolean, allowKey: string): void {
  if (allowed || !isAllInterfaces(host)) return;
  throw new ConfigError(`${key}: ${JSON.stringify(host)} listens on every interface; set ${allowKey} to true to allow it`);
}
