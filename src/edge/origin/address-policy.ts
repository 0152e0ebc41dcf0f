import { isIP, type BlockList } from "node:net";
import { isPublicAddress } from "../../core/net/public-address.js";

/**
 * Who may be an origin: a public unicast address that is not the platform's own (its edge addresses and
 * --platform-ranges), or an address the operator allowed with --origin-allow. Loopback, private, link-local and
 * the like are refused by default, so no tenant can make the edge connect into this host (the workerd binding
 * server, PostgreSQL) or its private network. Checked on the address connected to, also after a CNAME target is
 * resolved, so a name that resolves inward is refused too.
 */
export class OriginAddressPolicy {
  constructor(
    private readonly allow: BlockList,
    private readonly isPlatformAddress: (ip: string) => boolean,
  ) {}

  allowed(ip: string): boolean {
    const family = isIP(ip);
    if (family === 0) return false;
    if (this.allow.check(ip, family === 6 ? "ipv6" : "ipv4")) return true;
    return isPublicAddress(ip) && !this.isPlatformAddress(ip);
  }

  /** Public and not the platform's own, whatever the operator allowed: where Workers' other subrequests may go. */
  publicOnly(ip: string): boolean {
    return isIP(ip) !== 0 && isPublicAddress(ip) && !this.isPlatformAddress(ip);
  }
}
