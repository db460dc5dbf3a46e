/**
 * A link port for an agent a test starts. Ports the kernel hands out for outgoing connections
 * (32768–60999 here) can be taken by any other test's connection between the pick and the agent's
 * bind, so the pick stays below that range, and one that is in use right now is skipped.
 */
import { createServer } from 'node:net';

const LOW = 20_000;
const HIGH = 32_000;

/**
 * A port on `ip` that nothing listens on now, outside the kernel's range for outgoing connections.
 * @example const linkPort = await unusedLinkPort('127.0.0.1');
 */
export async function unusedLinkPort(ip = '127.0.0.1'): Promise<number> {
  for (let attempt = 0; attempt < 50; attempt++) {
    const port = LOW + Math.floor(Math.random() * (HIGH - LOW));
    const free = await new Promise<boolean>((resolve) => {
      const server = createServer();
      server.once('error', () => resolve(false));
      server.listen(port, ip, () => server.close(() => resolve(true)));
    });
    if (free) return port;
  }
  throw new Error(`no unused link port on ${ip} between ${LOW} and ${HIGH} after 50 tries`);
}
