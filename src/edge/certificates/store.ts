/** Where a Custom Domain's certificate stands. */
export type CertificateStatus = "pending" | "active" | "failed";

/**
 * The certificate of one Custom Domain hostname, ordered by the platform itself (manager.ts). `keySealed` is the
 * private key sealed with the platform's SecretBox (never stored or shown in the clear).
 */
export interface CertificateRow {
  hostname: string;
  accountId: string;
  status: CertificateStatus;
  /** The chain as the CA sent it (leaf first); null until one is issued. */
  certPem: string | null;
  keySealed: string | null;
  /** The leaf's notAfter, ms since the epoch; null until one is issued. */
  notAfter: number | null;
  /** Why the last order failed (a CA's or our own message, no secret), null after a success. */
  lastError: string | null;
  /** Failed orders since the last success; the backoff grows with it. */
  failures: number;
  /** When the next order may start (ms since the epoch): now for a new row, later after a failure or an issuance. */
  nextAttemptAt: number;
}

/** A certificate an account uploaded for one of its zones (POST /zones/{id}/custom_certificates). */
export interface CustomCertificateRow {
  id: string;
  zoneId: string;
  accountId: string;
  /** The names it is served for: its subject alternative names in the zone (`*.zone` included), lower case. */
  hosts: string[];
  /** The leaf first, then the intermediates, as uploaded (normalised PEM). */
  certPem: string;
  /** The private key sealed with the platform's SecretBox (never stored or shown in the clear). */
  keySealed: string;
  issuer: string;
  signature: string;
  bundleMethod: string;
  /** ms since the epoch */
  expiresOn: number;
  uploadedOn: number;
  modifiedOn: number;
}

/**
 * Certificate rows of Custom Domains. Every backend keeps these promises (store.contract.ts):
 * - One row per hostname. `ensure` makes a pending row (due at once) when there is none, or when the stored one is
 *   another account's (the hostname was detached and attached by another account: its certificate goes with it).
 * - An order is claimed (`claim`) by one node at a time: the claim succeeds only when no unexpired claim is held,
 *   so on several nodes on one database exactly one orders; a claim lasts `leaseMs` and ends with `issued`,
 *   `failed` or its expiry (a node that died while ordering). Only a due row (`nextAttemptAt` reached) is claimed.
 * - `issued` and `failed` write only while the caller's claim holds (another node's later claim wins), and release it.
 */
export interface CertificateStore {
  all(): Promise<CertificateRow[]>;
  ensure(hostname: string, accountId: string, now: number): Promise<void>;
  claim(hostname: string, node: string, now: number, leaseMs: number): Promise<boolean>;
  issued(hostname: string, node: string, cert: { certPem: string; keySealed: string; notAfter: number; nextAttemptAt: number }): Promise<boolean>;
  failed(hostname: string, node: string, failure: { error: string; nextAttemptAt: number }): Promise<boolean>;
  delete(hostname: string): Promise<boolean>;
  /** The sealed ACME account key kept for a CA directory. */
  accountKey(directoryUrl: string): Promise<string | undefined>;
  /** Keeps `keySealed` unless a key is kept for the directory already; returns the one kept. */
  saveAccountKey(directoryUrl: string, keySealed: string): Promise<string>;
  /** Every custom certificate, of every zone (each node serves them all), oldest first. */
  customCertificates(): Promise<CustomCertificateRow[]>;
  /** Adds one unless its zone has `max` already; false then (nothing written). */
  addCustomCertificate(row: CustomCertificateRow, max: number): Promise<boolean>;
  /** Replaces the certificate, key and what is read from them of the zone's certificate `id`; false when there is none. */
  replaceCustomCertificate(row: CustomCertificateRow): Promise<boolean>;
  /** Removes the zone's certificate `id`; false when there is none. */
  deleteCustomCertificate(zoneId: string, id: string): Promise<boolean>;
  /** Removes every custom certificate of a deleted zone; how many. */
  deleteZoneCustomCertificates(zoneId: string): Promise<number>;
}
