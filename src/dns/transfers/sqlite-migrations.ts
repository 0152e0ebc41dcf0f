import type { Migration } from "../../core/db/sqlite.js";

/** The transfers database (`<state>/db/dns-transfers.sqlite`), one append-only step per version. */
export const TRANSFER_MIGRATIONS: readonly Migration[] = [
  `CREATE TABLE tsigs (id TEXT PRIMARY KEY, account_id TEXT NOT NULL, name TEXT NOT NULL, algorithm TEXT NOT NULL, secret_sealed TEXT NOT NULL);
   CREATE TABLE peers (id TEXT PRIMARY KEY, account_id TEXT NOT NULL, name TEXT NOT NULL, ip TEXT, port INTEGER NOT NULL,
     tsig_id TEXT, ixfr_enable INTEGER NOT NULL);
   CREATE TABLE outgoing (zone_id TEXT PRIMARY KEY, account_id TEXT NOT NULL, peers TEXT NOT NULL, enabled INTEGER NOT NULL,
     created_time TEXT NOT NULL, last_transferred_time TEXT);
   CREATE TABLE journal (zone_id TEXT NOT NULL, seq INTEGER NOT NULL, from_serial INTEGER NOT NULL, to_serial INTEGER NOT NULL,
     from_soa BLOB NOT NULL, to_soa BLOB NOT NULL, removed BLOB NOT NULL, added BLOB NOT NULL, records INTEGER NOT NULL,
     PRIMARY KEY (zone_id, seq));`,
  // 2: secondary zones' incoming transfers.
  `CREATE TABLE incoming (zone_id TEXT PRIMARY KEY, account_id TEXT NOT NULL, peers TEXT NOT NULL, auto_refresh_seconds INTEGER NOT NULL,
     created_time TEXT NOT NULL, modified_time TEXT NOT NULL, checked_time TEXT, last_transferred_time TEXT);`,
];
