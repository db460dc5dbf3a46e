/**
 * Which local device a request's `local_ip_info` names. Devices of one agent may share an address
 * and differ only by link port (= `link_base_port` + logical id), so the address alone does not
 * pick a device: the device at exactly `ip:port` wins. A port that is no device's (LLM-DataDist
 * callers may give any local port) falls back to the first device on the address, as before.
 */
import type { IpPort } from '../links/endpoint.ts';

/** A local device as the lookup needs it. */
export interface AddressedDevice {
  readonly endpoint: string;
  readonly ip: string;
  readonly port: number;
}

/**
 * The endpoint of the device at `local`, else of the first device on its address, else undefined.
 * @example endpointAt(devices, { ip: '127.0.0.2', port: 26001 }) // '1'
 */
export function endpointAt(devices: readonly AddressedDevice[], local: IpPort | undefined): string | undefined {
  if (local === undefined) return undefined;
  const exact = devices.find((d) => d.ip === local.ip && d.port === local.port);
  return (exact ?? devices.find((d) => d.ip === local.ip))?.endpoint;
}
