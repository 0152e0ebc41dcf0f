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
  // Custom certificates uploaded for a zone (POST /zones/{id}/custom_certificates), their keys sealed.
  `CREATE TABLE custom_certificates (
     id TEXT COLLATE "C" PRIMARY KEY,
     zone_id TEXT COLLATE "C" NOT NULL,
     account_id TEXT NOT NULL,
     -- JSON array of the names it is served for (its subject alternative names in the zone).
     hosts TEXT NOT NULL,
     cert_pem TEXT NOT NULL,
     key_sealed TEXT NOT NULL,
     issuer TEXT NOT NULL,
     signature TEXT NOT NULL,
     bundle_method TEXT NOT NULL,
     expires_on BIGINT NOT NULL,
     uploaded_on BIGINT NOT NULL,
     modified_on BIGINT NOT NULL
   );
   CREATE INDEX custom_certificates_zone ON custom_certificates (zone_id);`,
];
