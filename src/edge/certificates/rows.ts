import type { CertificateRow, CertificateStatus, CustomCertificateRow } from "./store.js";

/** The columns both stores read, and the row they come as. */
export const CERTIFICATE_COLUMNS = "hostname, account_id, status, cert_pem, key_sealed, not_after, last_error, failures, next_attempt_at";

export interface CertificateDbRow {
  hostname: string;
  account_id: string;
  status: string;
  cert_pem: string | null;
  key_sealed: string | null;
  /** BIGINT columns come from PostgreSQL as strings. */
  not_after: number | string | null;
  last_error: string | null;
  failures: number;
  next_attempt_at: number | string;
}

export const toCertificate = (r: CertificateDbRow): CertificateRow => ({
  hostname: r.hostname,
  accountId: r.account_id,
  status: r.status as CertificateStatus,
  certPem: r.cert_pem,
  keySealed: r.key_sealed,
  notAfter: r.not_after === null ? null : Number(r.not_after),
  lastError: r.last_error,
  failures: r.failures,
  nextAttemptAt: Number(r.next_attempt_at),
});

export const CUSTOM_COLUMNS = "id, zone_id, account_id, hosts, cert_pem, key_sealed, issuer, signature, bundle_method, expires_on, uploaded_on, modified_on";

export interface CustomCertificateDbRow {
  id: string;
  zone_id: string;
  account_id: string;
  hosts: string;
  cert_pem: string;
  key_sealed: string;
  issuer: string;
  signature: string;
  bundle_method: string;
  expires_on: number | string;
  uploaded_on: number | string;
  modified_on: number | string;
}

export const toCustomCertificate = (r: CustomCertificateDbRow): CustomCertificateRow => ({
  id: r.id,
  zoneId: r.zone_id,
  accountId: r.account_id,
  hosts: JSON.parse(r.hosts) as string[],
  certPem: r.cert_pem,
  keySealed: r.key_sealed,
  issuer: r.issuer,
  signature: r.signature,
  bundleMethod: r.bundle_method,
  expiresOn: Number(r.expires_on),
  uploadedOn: Number(r.uploaded_on),
  modifiedOn: Number(r.modified_on),
});

/** The parameters of `addCustom` / `replaceCustom` (sql.ts), in their order. */
export const customParams = (c: CustomCertificateRow) => [
  c.id,
  c.zoneId,
  c.accountId,
  JSON.stringify(c.hosts),
  c.certPem,
  c.keySealed,
  c.issuer,
  c.signature,
  c.bundleMethod,
  c.expiresOn,
  c.uploadedOn,
  c.modifiedOn,
];
