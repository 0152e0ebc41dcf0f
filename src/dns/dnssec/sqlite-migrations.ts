import type { Migration } from "../../core/db/sqlite.js";

/** DNSSEC's own database (`<state>/db/dnssec.sqlite`), apart from the zones' so either can change alone. */
export const DNSSEC_MIGRATIONS: readonly Migration[] = [
  `CREATE TABLE zones (zone_id TEXT PRIMARY KEY, status TEXT NOT NULL, enabled_on TEXT, modified_on TEXT NOT NULL);
   CREATE TABLE keys (
     id TEXT PRIMARY KEY, zone_id TEXT NOT NULL REFERENCES zones(zone_id) ON DELETE CASCADE,
     seq INTEGER NOT NULL, role TEXT NOT NULL, state TEXT NOT NULL, key_tag INTEGER NOT NULL, public_key TEXT NOT NULL,
     private_key_sealed TEXT NOT NULL, created_on TEXT NOT NULL, state_since TEXT NOT NULL);
   CREATE INDEX keys_zone ON keys(zone_id);`,
];
