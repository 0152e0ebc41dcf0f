import type { Db, Migration } from "../core/db/sqlite.js";
import type { DnsRecord, Zone, ZoneSettings } from "./model.js";

export const dnsMigrations: readonly Migration[] = [
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
];

interface ZoneRow extends Omit<Zone, "paused" | "settings"> {
  paused: number;
  settings: string;
}
interface RecordRow extends Omit<DnsRecord, "data" | "proxied" | "tags" | "settings"> {
  data: string | null;
  proxied: number;
  tags: string;
  settings: string;
}

const zoneFromRow = (r: ZoneRow): Zone => ({ ...r, paused: !!r.paused, settings: JSON.parse(r.settings) as ZoneSettings });
const recordFromRow = (r: RecordRow): DnsRecord => ({
  ...r,
  data: r.data === null ? null : (JSON.parse(r.data) as Record<string, unknown>),
  proxied: !!r.proxied,
  tags: JSON.parse(r.tags) as string[],
  settings: JSON.parse(r.settings) as DnsRecord["settings"],
});

/** Durable state of the DNS area. Reads happen once at start; the in-memory state answers everything after. */
export class DnsStore {
  private readonly q;

  constructor(private readonly db: Db) {
    this.q = {
      putZone: db.prepare(
        `INSERT INTO zones (id, account_id, name, paused, created_on, modified_on, activated_on, serial, settings)
         VALUES (@id, @account_id, @name, @paused, @created_on, @modified_on, @activated_on, @serial, @settings)
         ON CONFLICT(id) DO UPDATE SET paused = excluded.paused, modified_on = excluded.modified_on, serial = excluded.serial, settings = excluded.settings`,
      ),
      delZone: db.prepare("DELETE FROM zones WHERE id = ?"),
      putRecord: db.prepare(
        `INSERT OR REPLACE INTO records (id, zone_id, name, type, content, data, priority, ttl, proxied, comment, tags, settings, created_on, modified_on, comment_modified_on, tags_modified_on)
         VALUES (@id, @zone_id, @name, @type, @content, @data, @priority, @ttl, @proxied, @comment, @tags, @settings, @created_on, @modified_on, @comment_modified_on, @tags_modified_on)`,
      ),
      delRecord: db.prepare("DELETE FROM records WHERE id = ?"),
      getAccount: db.prepare("SELECT settings FROM account_settings WHERE account_id = ?"),
      putAccount: db.prepare("INSERT OR REPLACE INTO account_settings (account_id, settings) VALUES (?, ?)"),
    };
  }

  loadZones(): Zone[] {
    return (this.db.prepare("SELECT * FROM zones").all() as ZoneRow[]).map(zoneFromRow);
  }

  loadRecords(): DnsRecord[] {
    return (this.db.prepare("SELECT * FROM records ORDER BY created_on, id").all() as RecordRow[]).map(recordFromRow);
  }

  /** Writes a zone and its record changes in one transaction: all or nothing. */
  writeZone(zone: Zone, upserts: readonly DnsRecord[] = [], deletes: readonly string[] = []): void {
    this.db.transaction(() => {
      this.q.putZone.run({ ...zone, paused: zone.paused ? 1 : 0, settings: JSON.stringify(zone.settings) });
      for (const id of deletes) this.q.delRecord.run(id);
      for (const r of upserts) {
        this.q.putRecord.run({
          ...r,
          data: r.data === null ? null : JSON.stringify(r.data),
          proxied: r.proxied ? 1 : 0,
          tags: JSON.stringify(r.tags),
          settings: JSON.stringify(r.settings),
        });
      }
    })();
  }

  deleteZone(id: string): void {
    this.q.delZone.run(id);
  }

  accountSettings(accountId: string): ZoneSettings | undefined {
    const row = this.q.getAccount.get(accountId) as { settings: string } | undefined;
    return row ? (JSON.parse(row.settings) as ZoneSettings) : undefined;
  }

  putAccountSettings(accountId: string, s: ZoneSettings): void {
    this.q.putAccount.run(accountId, JSON.stringify(s));
  }
}
