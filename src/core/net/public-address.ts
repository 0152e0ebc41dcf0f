import ipaddr from "ipaddr.js";

/**
 * Whether `ip` (a literal IPv4 or IPv6 address) is a public unicast address: not loopback, private, link-local,
 * unique-local, carrier-grade NAT, multicast, unspecified, documentation or otherwise reserved. An IPv4-mapped IPv6
 * address is judged as the IPv4 address it carries. Used wherever a tenant names an address the platform then
 * connects to (DNS transfer peers), so that a tenant cannot make the platform reach the host's own or its private
 * network's services (ipaddr.js keeps the IANA special-purpose ranges).
 */
export function isPublicAddress(ip: string): boolean {
  if (!ipaddr.isValid(ip)) return false;
  const addr = ipaddr.process(ip);
  // ipaddr.js calls the deprecated IPv4-compatible form (::a.b.c.d, RFC 4291 2.5.5.1) unicast; it carries an IPv4
  // address the way a mapped one does (::7f00:1 is 127.0.0.1), so none of ::/96 counts as public.
  if (addr.kind() === "ipv6" && (addr as ipaddr.IPv6).parts.slice(0, 6).every((p) => p === 0)) return false;
  return addr.range() === "unicast";
}
