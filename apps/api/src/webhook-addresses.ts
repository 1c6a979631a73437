import type { LookupAddress, LookupOptions } from 'node:dns';
import { lookup as dnsLookup } from 'node:dns';
import ipaddr from 'ipaddr.js';

// Unless private webhooks are allowed, a webhook URL must be https to a public address, so an integrator cannot
// make the server call into its own network. Checked when an endpoint is saved and again at every delivery.

/** True when `host` is an IP address rather than a name. */
export const isIpAddress = (host: string): boolean => ipaddr.isValid(host);

const IPV4_COMPATIBLE = ipaddr.parseCIDR('::/96') as [ipaddr.IPv6, number];

/** True for an address a webhook may reach. Unknown syntax is not public. */
export function isPublicAddress(address: string): boolean {
  const text = address.startsWith('[') && address.endsWith(']') ? address.slice(1, -1) : address;
  if (!ipaddr.isValid(text)) return false;
  let parsed = ipaddr.parse(text);
  if (parsed.kind() === 'ipv6') {
    const v6 = parsed as ipaddr.IPv6;
    // ::ffff:10.0.0.1 reaches 10.0.0.1.
    if (v6.isIPv4MappedAddress()) parsed = v6.toIPv4Address();
    // ::7f00:1, an IPv4-compatible address (deprecated, ::/96), may reach 127.0.0.1: never a target.
    else if (v6.match(IPV4_COMPATIBLE)) return false;
  }
  // Only ordinary unicast: every special range, including NAT64, 6to4 and carrier-grade NAT, is refused.
  return parsed.range() === 'unicast';
}

/** The host of a URL as DNS or an IP parser expects it (IPv6 without brackets). */
const hostOf = (url: URL): string => (url.hostname.startsWith('[') ? url.hostname.slice(1, -1) : url.hostname);

/** How long saving an endpoint waits for DNS before it lets the delivery-time check decide. */
const SAVE_LOOKUP_TIMEOUT_MS = 3_000;

function resolveAll(host: string, timeoutMs: number): Promise<LookupAddress[] | undefined> {
  return new Promise((resolve) => {
    const timer = setTimeout(() => resolve(undefined), timeoutMs);
    dnsLookup(host, { all: true, verbatim: true }, (error, addresses) => {
      clearTimeout(timer);
      resolve(error ? undefined : addresses);
    });
  });
}

/**
 * Why `url` may not receive webhooks under these settings, or undefined when it may. A host that
 * does not resolve now is accepted: every delivery checks its addresses again.
 */
export async function webhookUrlProblem(url: string, options: { allowPrivate: boolean }): Promise<string | undefined> {
  if (options.allowPrivate) return undefined;
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return 'Must be an absolute https URL';
  }
  if (parsed.protocol !== 'https:') return 'Must be an https URL: this server accepts no plain http';
  const host = hostOf(parsed);
  if (isIpAddress(host)) {
    return isPublicAddress(host) ? undefined : 'Must not point at a loopback, private, link-local or reserved address';
  }
  const addresses = await resolveAll(host, SAVE_LOOKUP_TIMEOUT_MS);
  if (addresses?.some((a) => !isPublicAddress(a.address))) {
    return `Must not point at a loopback, private, link-local or reserved address (${host} resolves to one)`;
  }
  return undefined;
}

type LookupCallback = (error: NodeJS.ErrnoException | null, address: string | LookupAddress[], family?: number) => void;

/** An error as the socket reports it when the guarded lookup refuses a host. */
export class PrivateAddressError extends Error {
  readonly code = 'EPRIVATEADDRESS';
  constructor(host: string, address: string) {
    super(`${host} resolves to a non-public address (${address})`);
    this.name = 'PrivateAddressError';
  }
}

/**
 * A `lookup` for node:http(s) that refuses hosts resolving to any non-public address, so that a
 * DNS answer that changed since the endpoint was saved cannot reach the private network.
 */
export function publicOnlyLookup(hostname: string, options: LookupOptions, callback: LookupCallback): void {
  dnsLookup(hostname, { ...options, all: true }, (error, addresses) => {
    if (error) return callback(error, []);
    const refused = addresses.find((a) => !isPublicAddress(a.address));
    if (refused) return callback(new PrivateAddressError(hostname, refused.address), []);
    if (addresses.length === 0)
      return callback(Object.assign(new Error(`${hostname} has no address`), { code: 'ENOTFOUND' }), []);
    if (options.all) return callback(null, addresses);
    const [first] = addresses as [LookupAddress];
    return callback(null, first.address, first.family);
  });
}

/** Why this URL may not be requested at all under these settings. */
export function requestRefusal(url: URL, allowPrivate: boolean): string | undefined {
  if (url.protocol !== 'https:' && url.protocol !== 'http:') return `unsupported protocol ${url.protocol}`;
  if (allowPrivate) return undefined;
  if (url.protocol !== 'https:') return 'plain http is not allowed (https only)';
  // An IP literal is connected to without a DNS look-up, so it is checked here.
  const host = url.hostname.startsWith('[') ? url.hostname.slice(1, -1) : url.hostname;
  if (isIpAddress(host) && !isPublicAddress(host)) return `refused non-public address ${host}`;
  return undefined;
}
