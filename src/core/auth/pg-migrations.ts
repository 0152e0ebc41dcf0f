import type { PgMigration } from "../db/pg-migrations.js";

/**
 * The identity tables on PostgreSQL (schema `core`), one append-only step per version. The same columns as the
 * SQLite schema; times stay ISO-8601 text (COLLATE "C": they and the ids sort the same as in SQLite, whatever the
 * database's locale), grants are JSONB.
 */
export const IDENTITY_PG_MIGRATIONS: PgMigration[] = [
  `CREATE TABLE accounts (id TEXT COLLATE "C" PRIMARY KEY, name TEXT NOT NULL, created_on TEXT COLLATE "C" NOT NULL);
   CREATE TABLE users (id TEXT COLLATE "C" PRIMARY KEY, email TEXT NOT NULL, created_on TEXT COLLATE "C" NOT NULL);
   CREATE UNIQUE INDEX users_email ON users (lower(email));
   CREATE TABLE memberships (user_id TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
     account_id TEXT NOT NULL REFERENCES accounts(id) ON DELETE CASCADE, PRIMARY KEY (user_id, account_id));
   CREATE TABLE global_keys (user_id TEXT PRIMARY KEY REFERENCES users(id) ON DELETE CASCADE, key_hash TEXT NOT NULL);
   CREATE TABLE api_tokens (id TEXT COLLATE "C" PRIMARY KEY, user_id TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
     name TEXT NOT NULL, token_hash TEXT NOT NULL UNIQUE, status TEXT NOT NULL, grants JSONB NOT NULL,
     issued_on TEXT COLLATE "C" NOT NULL, modified_on TEXT NOT NULL, last_used_on TEXT, not_before TEXT, expires_on TEXT);
   CREATE INDEX api_tokens_user ON api_tokens(user_id);`,
];
