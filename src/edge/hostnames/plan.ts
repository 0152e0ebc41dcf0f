import { isIP } from "node:net";
import { getDomain } from "tldts";
import { EdgeErrors, type Collision, type ReservedUse } from "../errors.js";
import { atOrUnder, normalizeHostname } from "./names.js";

/** The hostnames the platform answers for itself (edge/config.ts reads them from the serve options). */
export interface HostnamePlan {
  /** Where the v4 API is reached (and the dashboard, the AI gateway and S3 path style when no dashboard host is set). */
  apiHostnames: readonly string[];
  /** The dashboard's own origin, when the operator gives it one. */
  dashboardHostname?: string;
  /** The S3 API's host; names under it are buckets and accounts (virtual-hosted style). "" when off. */
  s3Host: string;
  /** `<script>.<workersDomain>` is a Worker. */
  workersDomain: string;
  /** The authoritative name servers in every zone's NS set. */
  nameServers: readonly string[];
}

/**
 * The platform's own services a hostname may name; "reserved": a platform name that serves nothing over HTTP (the
 * name servers' domain, names under an API hostname), answered with an error page.
 */
export type PlatformService = "api" | "dashboard" | "s3" | "workers" | "reserved";

/**
 * What a request's Host names: one of the platform's services; a name of a tenant's zone (its Workers, later its
 * origins); or nothing this platform knows.
 */
export type HostClass = { kind: "platform"; service: PlatformService; host: string } | { kind: "tenant"; host: string } | { kind: "unknown"; host: string };

/** One reserved name and the role it plays, for refusals. */
interface Reservation {
  name: string;
  role: string;
  service: PlatformService;
}

/**
 * The one classification of hostnames, and the one list of what tenants may not hold. Every request is classified
 * here once (dispatch.ts); zones, records, Custom Domains, routes and certificates are checked here (the areas get
 * the `PlatformHostnames` port, core/service.ts).
 */
export class Hostnames {
  private readonly reservations: Reservation[];

  constructor(
    readonly plan: HostnamePlan,
    /** Whether a name is at or under a zone of this platform. */
    private readonly isTenantName: (host: string) => boolean,
  ) {
    const r: Reservation[] = [];
    // Most specific first: a name under the S3 host is S3's even if an API hostname is above it (r2.localhost).
    if (plan.dashboardHostname) r.push({ name: plan.dashboardHostname, role: "dashboard", service: "dashboard" });
    if (plan.s3Host) r.push({ name: plan.s3Host, role: "S3 API", service: "s3" });
    if (plan.workersDomain) r.push({ name: plan.workersDomain, role: "workers domain", service: "workers" });
    for (const ns of plan.nameServers) {
      // The name servers' own domain (edge-platform.test for ns1.edge-platform.test), unless it is a public suffix.
      r.push({ name: getDomain(ns, { allowPrivateDomains: true }) ?? ns, role: `name servers' (${ns})`, service: "reserved" });
    }
    for (const api of plan.apiHostnames) r.push({ name: api, role: "API", service: "api" });
    // Longest name first, so the most specific reservation decides.
    this.reservations = r.sort((a, b) => b.name.length - a.name.length);
  }

  /**
   * The class of a request's Host. Loopback keeps today's default: a Host that is an address, empty, or names
   * nothing this platform knows reaches the API when the connection came to a loopback address (`127.0.0.1:8787`
   * as the docs and tests use it), so only tenants' names and the platform's own are told apart there.
   */
  classify(hostHeader: string | undefined, arrivedOnLoopback = false): HostClass {
    const host = normalizeHostname(hostHeader);
    if (host === "" || (mayBeAddress(host) && isIP(host))) return { kind: "platform", service: "api", host };
    const reserved = this.reservationOf(host);
    if (reserved) {
      // The name itself is the service; a name under it is served only by the two that have names under them.
      if (host === reserved.name || reserved.service === "s3" || reserved.service === "workers") return { kind: "platform", service: reserved.service, host };
      return { kind: "platform", service: "reserved", host };
    }
    if (this.isTenantName(host)) return { kind: "tenant", host };
    return arrivedOnLoopback ? { kind: "platform", service: "api", host } : { kind: "unknown", host };
  }

  /** Whether `name` is a platform hostname or under one. */
  isPlatformHostname(name: string): boolean {
    return this.reservationOf(normalizeHostname(name)) !== undefined;
  }

  /**
   * Refuses (400) a name of a tenant's that is at or under a platform hostname, or, for a zone, above one (a zone
   * `edge-platform.test` would hold the name servers' names).
   */
  refuse(use: ReservedUse, name: string): void {
    const n = normalizeHostname(name);
    const at = this.reservationOf(n);
    if (at) throw EdgeErrors.platformHostname(use, n, n === at.name ? "at" : "under", at.name, at.role);
    if (use !== "zone") return;
    const below = this.reservations.find((r) => r.name.endsWith(`.${n}`));
    if (below) throw EdgeErrors.platformHostname(use, n, "above" satisfies Collision, below.name, below.role);
  }

  private reservationOf(host: string): Reservation | undefined {
    return this.reservations.find((r) => atOrUnder(host, r.name));
  }
}

/** Whether a normalized host may be an IP address (isIP's regular expressions are not cheap): IPv6 has a colon, IPv4 ends in a digit. */
function mayBeAddress(host: string): boolean {
  const last = host.charCodeAt(host.length - 1);
  return (last >= 48 && last <= 57) || host.includes(":");
}
