import { Counter, Gauge, type Registry } from "prom-client";
import { METRIC_PREFIX } from "../../core/metrics/registry.js";
import type { CertificateKind, CertificateManager } from "./manager.js";

const KINDS: readonly CertificateKind[] = ["custom_domain", "zone_edge", "custom_uploaded"];
/** The windows of `certificates_expiring`, in days. */
const WITHIN_DAYS = [7, 30] as const;
const DAY_MS = 86_400_000;

/**
 * The certificates' metrics, read from what the manager holds when scraped (the stored certificates as of its last
 * read: every node of a cluster shows the same ones): how many there are by kind and status, how many expire within
 * 7 and 30 days, the earliest expiry per kind; and the orders this node finished. Labels are kinds, statuses and
 * windows only, never a hostname: an operator finds which certificate it is in the API or the dashboard.
 */
export function registerCertificateMetrics(registry: Registry, manager: CertificateManager): void {
  new Gauge({
    name: `${METRIC_PREFIX}certificates`,
    help: "Certificates the edge holds, by kind (custom_domain, zone_edge: ordered by the platform; custom_uploaded: uploaded by an account) and status (pending, active, failed)",
    labelNames: ["kind", "status"],
    registers: [registry],
    collect() {
      this.reset();
      for (const c of manager.certificates()) this.inc({ kind: c.kind, status: c.status });
    },
  });
  new Gauge({
    name: `${METRIC_PREFIX}certificates_expiring`,
    help: "Issued certificates whose notAfter is within the window from now (7d, 30d), those expired already included, by kind",
    labelNames: ["kind", "within"],
    registers: [registry],
    collect() {
      const now = Date.now();
      const counts = new Map<string, number>();
      for (const kind of KINDS) for (const days of WITHIN_DAYS) counts.set(`${kind} ${days}`, 0);
      for (const c of manager.certificates()) {
        if (c.notAfter === null) continue;
        for (const days of WITHIN_DAYS) if (c.notAfter <= now + days * DAY_MS) counts.set(`${c.kind} ${days}`, counts.get(`${c.kind} ${days}`)! + 1);
      }
      for (const kind of KINDS) for (const days of WITHIN_DAYS) this.set({ kind, within: `${days}d` }, counts.get(`${kind} ${days}`)!);
    },
  });
  new Gauge({
    name: `${METRIC_PREFIX}certificates_earliest_expiry_timestamp_seconds`,
    help: "The earliest notAfter of the issued certificates of a kind, in seconds since the epoch (no sample for a kind without one)",
    labelNames: ["kind"],
    registers: [registry],
    collect() {
      this.reset();
      const earliest = new Map<CertificateKind, number>();
      for (const c of manager.certificates()) {
        if (c.notAfter === null) continue;
        const known = earliest.get(c.kind);
        if (known === undefined || c.notAfter < known) earliest.set(c.kind, c.notAfter);
      }
      for (const [kind, notAfter] of earliest) this.set({ kind }, Math.floor(notAfter / 1000));
    },
  });
  new Counter({
    name: `${METRIC_PREFIX}certificate_orders_total`,
    help: "Certificate orders (new and renewals) this node finished, by kind (custom_domain, zone_edge) and outcome (issued, failed)",
    labelNames: ["kind", "outcome"],
    registers: [registry],
    collect() {
      this.reset();
      for (const [kind, o] of Object.entries(manager.orders)) {
        this.inc({ kind, outcome: "issued" }, o.issued);
        this.inc({ kind, outcome: "failed" }, o.failed);
      }
    },
  });
}
