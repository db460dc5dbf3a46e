/**
 * One spelling per address, for telling whether two addresses a user wrote are the same: IPv6 has
 * many (`::1`, `0:0:0:0:0:0:0:1`, `0::1`, upper or lower case), an IPv4-mapped IPv6 address
 * (`::ffff:10.0.0.1`, `::ffff:a00:1`) reaches the IPv4 host it maps, and a URL may spell its
 * scheme and host in any case, leave out its default port or end in a slash. The keys are for
 * comparing only; what a user wrote is what pdlink sends.
 */

/**
 * The canonical form of an IP address (WHATWG's serialisation; IPv4-mapped IPv6 as IPv4); the
 * input unchanged when it is not an address.
 * @example ipKey('0:0:0:0:0:0:0:1') // '::1'
 * @example ipKey('::ffff:a00:1') // '10.0.0.1'
 */
export function ipKey(ip: string): string {
  const bare = ip.startsWith('[') && ip.endsWith(']') ? ip.slice(1, -1) : ip;
  let host: string;
  try {
    host = new URL(`http://${bare.includes(':') ? `[${bare}]` : bare}/`).hostname;
  } catch {
    return ip;
  }
  return unmapped(host.replace(/^\[|\]$/g, ''));
}

/**
 * The canonical form of an http(s) URL: scheme, host as ipKey spells it, explicit port, path
 * without a trailing slash; query and fragment dropped. The input unchanged when it is not a URL.
 * @example urlKey('HTTP://[0:0:0:0:0:0:0:1]/') // 'http://[::1]:80'
 */
export function urlKey(url: string): string {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    return url;
  }
  const host = ipKey(u.hostname);
  const port = u.port === '' ? (u.protocol === 'https:' ? '443' : '80') : u.port;
  return `${u.protocol}//${host.includes(':') ? `[${host}]` : host}:${port}${u.pathname.replace(/\/+$/, '')}`;
}

/** `::ffff:a00:1` → `10.0.0.1`; any other address unchanged. */
function unmapped(host: string): string {
  const mapped = /^::ffff:([0-9a-f]{1,4}):([0-9a-f]{1,4})$/.exec(host);
  if (mapped === null) return host;
  const hi = parseInt(mapped[1]!, 16);
  const lo = parseInt(mapped[2]!, 16);
  return `${hi >> 8}.${hi & 0xff}.${lo >> 8}.${lo & 0xff}`;
}
