import type { Migration } from "../core/db/sqlite.js";

/** The DNS database's schema (`<state>/db/dns.sqlite`), one append-only step per version. */
export const DNS_MIGRATIONS: readonly Migration[] = [
  `CREATE TABLE zones (
     id TEXT PRIMARY KEY, account_id TEXT NOT NULL, name TEXT NOT NULL UNIQUE, paused INTEGER NOT NULL DEFAULT 0,
     created_on TEXT NOT NULL, modified_on TEXT NOT NULL, activated_on TEXT, serial INTEGER NOT NULL, settings TEXT NOT NULL);
   CREATE INDEX zones_account ON zones(account_id);
   CREATE TABLE records (
     id TEXT PRIMARY KEY, zone_id TEXT NOT NULL REFERENCES zones(id) ON DELETE CASCADE,
     name TEXT NOT NULL, type TEXT NOT NULL, content TEXT NOT NULL, data TEXT, priority INTEGER,
     ttl INTEGER NOT NULL, proxied INTEGER NOT NULL, comment TEXT, tags TEXT NOT NULL, settings TEXT NOT NULL,
     created_on TEXT NOT NULL, modified_on TEXT NOT NULL, comment_modified_on TEXT, tags_modified_on TEXT);
   CREATE INDEX records_zone ON records(zone_id);
   CREATE TABLE account_settings (account_id TEXT PRIMARY KEY, settings TEXT NOT NULL);`,
  // 2: secondary zones (copied from a primary by zone transfer).
  `ALTER TABLE zones ADD COLUMN type TEXT NOT NULL DEFAULT 'full';`,
  // 3: the number of each zone's records, kept with the zone by every write (the per-zone record limit).
  `ALTER TABLE zones ADD COLUMN record_count INTEGER NOT NULL DEFAULT 0;
   UPDATE zones SET record_count = (SELECT count(*) FROM records WHERE records.zone_id = zones.id);`,
];
