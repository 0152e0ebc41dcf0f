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
  return ipaddr.process(ip).range() === "unicast";
}
