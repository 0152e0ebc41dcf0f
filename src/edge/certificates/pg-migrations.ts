import type { PgMigration } from "../../core/db/pg-migrations.js";

/** Certificates of Custom Domains on PostgreSQL (schema `worker_certificates`), as the SQLite ones. */
export const CERTIFICATES_PG_MIGRATIONS: readonly PgMigration[] = [
  `CREATE TABLE certificates (
     hostname TEXT COLLATE "C" PRIMARY KEY,
     account_id TEXT COLLATE "C" NOT NULL,
     status TEXT NOT NULL,
     cert_pem TEXT,
     key_sealed TEXT,
     not_after BIGINT,
     last_error TEXT,
     failures INTEGER NOT NULL DEFAULT 0,
     next_attempt_at BIGINT NOT NULL,
     claimed_by TEXT,
     claimed_until BIGINT NOT NULL DEFAULT 0
   );
   -- The platform's ACME account key, one per CA directory, sealed like the certificates' keys.
   CREATE TABLE acme_accounts (
     directory_url TEXT PRIMARY KEY,
     key_sealed TEXT NOT NULL
   );`,
];
