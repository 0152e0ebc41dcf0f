import { createHash, X509Certificate } from "node:crypto";
import type { CertificateManager } from "./manager.js";
import type { CertificateRow } from "./store.js";

/** A zone as the packs are shown for. */
interface PackZone {
  id: string;
  name: string;
}

/**
 * The hosted certificate pack of a zone's edge certificate (`type: "universal"`): the apex and `*.zone`, ordered by
 * the platform while the zone has a proxied record (manager.ts, row `*.<zone>`). Read from the manager's view.
 */
export class CertificatePacks {
  /** What is read from an issued PEM, by the PEM (a renewal makes a new entry; the old one goes with the map's reset). */
  private parsed = new Map<string, { issuer: string; signature: string; notBefore: number }>();

  constructor(
    private readonly manager: CertificateManager,
    /** The hosted `certificate_authority` of the operator's ACME directory (`lets_encrypt`, `google`, …; else its host). */
    private readonly authority: string,
  ) {}

  ofZone(zone: PackZone): ReturnType<CertificatePacks["pack"]>[] {
    const row = this.manager.row(`*.${zone.name}`);
    if (!this.manager.zoneWanted(zone.name) && !row) return [];
    return [this.pack(zone, row)];
  }

  private pack(zone: PackZone, row: CertificateRow | undefined) {
    const id = createHash("sha256").update(`universal:${zone.id}`).digest("hex").slice(0, 32);
    const hosts = [zone.name, `*.${zone.name}`];
    const issued = row?.certPem && row.notAfter !== null ? this.read(row.certPem) : undefined;
    const status = issued ? "active" : "pending_validation";
    return {
      id,
      type: "universal",
      hosts,
      status,
      validation_method: "txt",
      validity_days: issued ? Math.round((row!.notAfter! - issued.notBefore) / 86_400_000) : 90,
      certificate_authority: this.authority,
      cloudflare_branding: false,
      primary_certificate: issued ? id : undefined,
      certificates: issued
        ? [
            {
              id,
              hosts,
              issuer: issued.issuer,
              signature: issued.signature,
              status: "active",
              bundle_method: "ubiquitous",
              zone_id: zone.id,
              uploaded_on: new Date(issued.notBefore).toISOString(),
              modified_on: new Date(issued.notBefore).toISOString(),
              expires_on: new Date(row!.notAfter!).toISOString(),
              priority: 0,
            },
          ]
        : [],
      // Why the last order failed, as hosted shows a failed validation; the next attempt is ours (not hosted).
      validation_errors: row?.lastError ? [{ message: row.lastError }] : [],
      ...(row && row.status !== "active" && { next_attempt_on: new Date(row.nextAttemptAt).toISOString() }),
    };
  }

  private read(pem: string) {
    let known = this.parsed.get(pem);
    if (!known) {
      const leaf = new X509Certificate(pem);
      known = {
        issuer: /(?:^|\n)O=([^\n]+)/.exec(leaf.issuer)?.[1] ?? /(?:^|\n)CN=([^\n]+)/.exec(leaf.issuer)?.[1] ?? "unknown",
        signature: leaf.publicKey.asymmetricKeyType === "ec" ? "ECDSAWithSHA256" : "SHA256WithRSA",
        notBefore: Date.parse(leaf.validFrom),
      };
      if (this.parsed.size > 10_000) this.parsed.clear();
      this.parsed.set(pem, known);
    }
    return known;
  }
}

/** The hosted `certificate_authority` name of an ACME directory URL; other CAs by their host (ours). */
export function authorityOf(directoryUrl: string): string {
  const host = new URL(directoryUrl).hostname;
  if (host.endsWith("letsencrypt.org")) return "lets_encrypt";
  if (host.endsWith("pki.goog")) return "google";
  if (host.endsWith("ssl.com")) return "ssl_com";
  return host;
}
