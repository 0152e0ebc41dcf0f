import type { PgMigration } from "../core/db/pg-migrations.js";

/**
 * DNS's tables on PostgreSQL (schema `dns`), append-only as the SQLite ones. Text that is ordered (zone names,
 * record creation times and ids) is COLLATE "C": byte order whatever the database's locale, as in SQLite. JSON
 * columns stay the text they were written as. A serial is BIGINT: DNS serials are unsigned 32-bit.
 */
export const DNS_PG_MIGRATIONS: readonly PgMigration[] = [
  `CREATE TABLE zones (
     id TEXT COLLATE "C" PRIMARY KEY,
     account_id TEXT NOT NULL,
     name TEXT COLLATE "C" NOT NULL UNIQUE,
     paused BOOLEAN NOT NULL DEFAULT false,
     created_on TEXT NOT NULL,
     modified_on TEXT NOT NULL,
     activated_on TEXT,
     serial BIGINT NOT NULL,
     settings TEXT NOT NULL
   );
   CREATE INDEX zones_account ON zones (account_id);
   CREATE TABLE records (
     id TEXT COLLATE "C" PRIMARY KEY,
     zone_id TEXT COLLATE "C" NOT NULL REFERENCES zones(id) ON DELETE CASCADE,
     name TEXT NOT NULL,
     type TEXT NOT NULL,
     content TEXT NOT NULL,
     data TEXT,
     priority INTEGER,
     ttl INTEGER NOT NULL,
     proxied BOOLEAN NOT NULL,
     comment TEXT,
     tags TEXT NOT NULL,
     settings TEXT NOT NULL,
     created_on TEXT COLLATE "C" NOT NULL,
     modified_on TEXT NOT NULL,
     comment_modified_on TEXT,
     tags_modified_on TEXT
   );
   -- A zone's records a page at a time, in creation order (keyset pagination).
   CREATE INDEX records_zone_order ON records (zone_id, created_on, id);
   CREATE TABLE account_settings (account_id TEXT PRIMARY KEY, settings TEXT NOT NULL);`,
  // 2: the number of each zone's records, kept with the zone by every write (the per-zone record limit).
  `ALTER TABLE zones ADD COLUMN record_count INTEGER NOT NULL DEFAULT 0;
   UPDATE zones SET record_count = (SELECT count(*) FROM records WHERE records.zone_id = zones.id);`,
];
