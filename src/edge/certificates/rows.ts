import type { CertificateRow, CertificateStatus } from "./store.js";

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
