import type { Migration } from "../../core/db/sqlite.js";

/** Certificates of Custom Domains (`<state>/db/worker-certificates.sqlite`), one append-only step per version. */
export const CERTIFICATES_MIGRATIONS: readonly Migration[] = [
  `CREATE TABLE certificates (
     hostname TEXT PRIMARY KEY,
     account_id TEXT NOT NULL,
     status TEXT NOT NULL,
     cert_pem TEXT,
     key_sealed TEXT,
     not_after INTEGER,
     last_error TEXT,
     failures INTEGER NOT NULL DEFAULT 0,
     next_attempt_at INTEGER NOT NULL,
     claimed_by TEXT,
     claimed_until INTEGER NOT NULL DEFAULT 0
   );
   -- The platform's ACME account key, one per CA directory, sealed like the certificates' keys.
   CREATE TABLE acme_accounts (
     directory_url TEXT PRIMARY KEY,
     key_sealed TEXT NOT NULL
   );`,
];
