/**
 * Which instance addresses a Coordinator or an agent may be told to talk to. Without it, whoever
 * reaches a management API can point the proxy or a device link at any host — a cloud metadata
 * address, a port scan, the Coordinator itself in a loop. Addresses that are never an instance
 * (link-local, multicast, broadcast) and the process's own listeners are always refused; when
 * `pdlink.allowed_instance_networks` is set, only addresses inside those CIDRs are accepted.
 */
import { BlockList, isIP } from 'node:net';

export interface OwnListener {
  readonly ip: string;
  readonly port: number;
}

/** Never an instance: link-local (cloud metadata lives there) and multicast/broadcast. */
const NEVER: readonly [string, number, 'ipv4' | 'ipv6'][] = [
  ['169.254.0.0', 16, 'ipv4'],
  ['224.0.0.0', 4, 'ipv4'],
  ['255.255.255.255', 32, 'ipv4'],
  ['fe80::', 10, 'ipv6'],
  ['ff00::', 8, 'ipv6'],
];

/** Loopback: what a listener bound to the unspecified address also answers on. */
const LOOPBACK: readonly [string, number, 'ipv4' | 'ipv6'][] = [
  ['127.0.0.0', 8, 'ipv4'],
  ['::1', 128, 'ipv6'],
];

/** Network verdicts that are not a refusal message. */
const ACCEPTED = '';
const NOT_AN_ADDRESS = '\0';
const NETWORK_VERDICTS_MAX = 65_536;

const UNSPECIFIED = new Set(['0.0.0.0', '::']);
/** Where a connection to the unspecified address lands (Linux routes it to loopback). */
const DEFAULT_LOOPBACK = new Set(['127.0.0.1', '::1']);

/**
 * An address as one spelling names one host: IPv6 in its canonical form (lower case, zeros
 * compressed), and an IPv4-mapped IPv6 address (`::ffff:127.0.0.1`, `::ffff:7f00:1`,
 * `0:0:0:0:0:ffff:7f00:1`) as the IPv4 address it maps.
 * @example hostOf('::FFFF:7F00:1') // '127.0.0.1'
 */
export function hostOf(ip: string): string {
  if (isIP(ip) !== 6) return ip;
  let canonical: string;
  try {
    canonical = new URL(`http://[${ip}]/`).hostname.slice(1, -1);
  } catch {
    return ip.toLowerCase();
  }
  const mapped = /^::ffff:([0-9a-f]{1,4}):([0-9a-f]{1,4})$/.exec(canonical);
  if (mapped === null) return canonical;
  const high = parseInt(mapped[1]!, 16);
  const low = parseInt(mapped[2]!, 16);
  return `${high >> 8}.${high & 255}.${low >> 8}.${low & 255}`;
}

/**
 * Parses `a.b.c.d/n` or `x::/n`; throws an Error naming the problem.
 * @example parseCidr('10.0.0.0/8') // { address: '10.0.0.0', prefix: 8, family: 'ipv4' }
 */
export function parseCidr(cidr: string): { address: string; prefix: number; family: 'ipv4' | 'ipv6' } {
  const slash = cidr.indexOf('/');
  const address = slash < 0 ? cidr : cidr.slice(0, slash);
  const version = isIP(address);
  if (version === 0) throw new Error(`${JSON.stringify(cidr)} is not an IPv4 or IPv6 network`);
  const max = version === 4 ? 32 : 128;
  const prefixText = slash < 0 ? String(max) : cidr.slice(slash + 1);
  const prefix = Number(prefixText);
  if (!/^\d{1,3}$/.test(prefixText) || prefix > max) throw new Error(`${JSON.stringify(cidr)}: prefix must be 0 to ${max}`);
  return { address, prefix, family: version === 4 ? 'ipv4' : 'ipv6' };
}

export class InstanceAddressPolicy {
  readonly #never = new BlockList();
  readonly #loopback = new BlockList();
  readonly #allowed: BlockList | undefined;
  readonly #own: OwnListener[];
  #generation = 0;
  /**
   * The address-only verdict per address seen: a refresh asks about every instance every second,
   * and parsing the address and checking it against the networks costs more than the rest of its
   * checks together; the networks never change, so the verdict is kept.
   */
  readonly #networkVerdicts = new Map<string, string>();

  /**
   * @param allowedNetworks CIDRs (already checked with parseCidr); undefined = any address not refused by default.
   * @param own The process's own listeners, refused so that it is never told to call itself.
   * @example new InstanceAddressPolicy(['10.0.0.0/8'], [{ ip: '127.0.0.1', port: 1025 }])
   */
  constructor(allowedNetworks: readonly string[] | undefined, own: readonly OwnListener[] = []) {
    for (const [address, prefix, family] of NEVER) this.#never.addSubnet(address, prefix, family);
    for (const [address, prefix, family] of LOOPBACK) this.#loopback.addSubnet(address, prefix, family);
    if (allowedNetworks !== undefined) {
      this.#allowed = new BlockList();
      for (const cidr of allowedNetworks) {
        const { address, prefix, family } = parseCidr(cidr);
        this.#allowed.addSubnet(address, prefix, family);
      }
    }
    this.#own = [...own];
  }

  /**
   * Why an address (and port, when known: a number or its decimal text) may not be an instance, or undefined when it may.
   * @example policy.refusal('169.254.169.254') // 'link-local, multicast and broadcast addresses are never instances'
   */
  refusal(ip: string, port?: number | string): string | undefined {
    let byNetwork = this.#networkVerdicts.get(ip);
    if (byNetwork === undefined) {
      byNetwork = this.#networkRefusal(ip);
      // Bounded: a cluster has a few thousand addresses; a flood of distinct ones starts over.
      if (this.#networkVerdicts.size >= NETWORK_VERDICTS_MAX) this.#networkVerdicts.clear();
      this.#networkVerdicts.set(ip, byNetwork);
    }
    if (byNetwork !== ACCEPTED) return byNetwork === NOT_AN_ADDRESS ? undefined : byNetwork;
    if (port === undefined || this.#own.length === 0) return undefined;
    // A port as the wire carries it (a decimal string) is converted only when there is a listener to compare with.
    const number = typeof port === 'string' ? Number(port) : port;
    if (this.#own.some((o) => o.port === number && this.#sameHost(o.ip, ip))) return "is one of this process's own listeners";
    return undefined;
  }

  /** The part of refusal() that depends on the address alone (the networks are fixed at construction). */
  #networkRefusal(ip: string): string {
    const version = isIP(ip);
    if (version === 0) return NOT_AN_ADDRESS; // the schema names that problem
    const family = version === 4 ? 'ipv4' : 'ipv6';
    if (this.#never.check(ip, family)) return 'link-local, multicast and broadcast addresses are never instances';
    if (this.#allowed !== undefined && !this.#allowed.check(ip, family)) return 'outside pdlink.allowed_instance_networks';
    return ACCEPTED;
  }

  /**
   * Whether a connection to `named` reaches a listener bound to `own`: the same address; any
   * loopback or unspecified address when the listener binds the unspecified one; and the
   * unspecified address reaches a listener on 127.0.0.1 or ::1. Distinct loopback addresses are
   * distinct listeners (the simulated clusters put each engine on its own).
   */
  #sameHost(own: string, named: string): boolean {
    const [o, n] = [hostOf(own), hostOf(named)];
    if (o === n) return true;
    const loopback = (x: string) => this.#loopback.check(x, isIP(x) === 4 ? 'ipv4' : 'ipv6');
    if (UNSPECIFIED.has(o)) return loopback(n) || UNSPECIFIED.has(n);
    return UNSPECIFIED.has(n) && DEFAULT_LOOPBACK.has(o);
  }

  /**
   * Adds listeners once their ports are known (a listener on port 0 learns its port after binding).
   * @example policy.addOwn(listeners.map((l) => ({ ip: settings.manage.ip, port: l.port })));
   */
  addOwn(own: readonly OwnListener[]): void {
    this.#own.push(...own);
    if (own.length > 0) this.#generation++;
  }

  /**
   * Changes whenever a verdict may have changed (listeners were added), so a caller may keep the
   * verdicts it got and ask again only then.
   * @example if (policy.generation !== checkedAt) recheck();
   */
  get generation(): number {
    return this.#generation;
  }
}
