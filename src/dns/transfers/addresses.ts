import { isIP, type BlockList } from "node:net";
import { isPublicAddress } from "../../core/net/public-address.js";

/** Why a peer's address is refused (shown in the API's 400 and in a secondary zone's last error). */
export const PEER_NOT_ALLOWED =
  "not a public address; this platform connects to transfer peers on public addresses only, unless its operator allows a range with --dns-peer-allow";

/**
 * Whether the platform may connect to a transfer peer a tenant named at `ip`: a public address, or one in the ranges the
 * operator allows (--dns-peer-allow). Otherwise a tenant could make the platform open connections to the host's own
 * services or its private network (and learn from the errors which ports answer).
 */
export function peerAddressAllowed(ip: string, allow: BlockList): boolean {
  const family = isIP(ip);
  if (family === 0) return false;
  return isPublicAddress(ip) || allow.check(ip, family === 6 ? "ipv6" : "ipv4");
}
