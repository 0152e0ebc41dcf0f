import type { Db } from "../core/db/sqlite.js";
import { DnsErrors } from "./errors.js";
import type { DnsRecord, Zone, ZoneSettings } from "./model.js";
import { ZoneChangedError, type DnsStore, type RecordChanges, type RecordPage, type WriteCondition } from "./store.js";

interface ZoneRow extends Omit<Zone, "paused" | "settings" | "type"> {
  paused: number;
  settings: string;
  type: string;
  record_count: number;
}
interface RecordRow extends Omit<DnsRecord, "data" | "proxied" | "tags" | "settings"> {
  data: string | null;
  proxied: number;
  tags: string;
  settings: string;
}

/** A full zone is read without `type` (as every store writes it); only a secondary zone says so. */
// record_count is the store's own bookkeeping (the per-zone record limit), not part of a Zone.
const zoneFromRow = ({ type, record_count, ...r }: ZoneRow): Zone => ({
  ...r,
  paused: !!r.paused,
  settings: JSON.parse(r.settings) as ZoneSettings,
  ...(type === "secondary" ? { type: "secondary" as const } : {}),
});
const recordFromRow = (r: RecordRow): DnsRecord => ({
  ...r,
  data: r.data === null ? null : (JSON.parse(r.data) as Record<string, unknown>),
  proxied: !!r.proxied,
  tags: JSON.parse(r.tags) as string[],
  settings: JSON.parse(r.settings) as DnsRecord["settings"],
});
const zoneRow = (z: Zone) => ({ ...z, paused: z.paused ? 1 : 0, settings: JSON.stringify(z.settings), type: z.type ?? "full" });
const recordRow = (r: DnsRecord) => ({
  ...r,
  data: r.data === null ? null : JSON.stringify(r.data),
  proxied: r.proxied ? 1 : 0,
  tags: JSON.stringify(r.tags),
  settings: JSON.stringify(r.settings),
});

const DEFAULT_PAGE = 1000;
/** Rows written between two turns of the event loop by a large updateZone (a few milliseconds of work). */
const ROWS_PER_TURN = 500;
const MAX_PAGE = 10_000;
/** A page position: the creation time and id of the last record of the previous page (ISO times hold no space). */
const position = (r: DnsRecord) => `${r.created_on} ${r.id}`;

/** The DNS store on SQLite (`<state>/db/dns.sqlite`, DNS_MIGRATIONS). */
export class SqliteDnsStore implements DnsStore {
  private readonly q;

  constructor(private readonly db: Db) {
    this.q = {
      listZones: db.prepare("SELECT * FROM zones ORDER BY name"),
      getZone: db.prepare("SELECT * FROM zones WHERE id = ?"),
      serialOf: db.prepare("SELECT serial FROM zones WHERE id = ?"),
      zoneNamed: db.prepare("SELECT 1 FROM zones WHERE name = ?"),
      zoneIdsNamed: db.prepare("SELECT id FROM zones WHERE name IN (SELECT value FROM json_each(?))").pluck(),
      insZone: db.prepare(
        `INSERT INTO zones (id, account_id, name, paused, created_on, modified_on, activated_on, serial, settings, type)
         VALUES (@id, @account_id, @name, @paused, @created_on, @modified_on, @activated_on, @serial, @settings, @type)`,
      ),
      updZone: db.prepare("UPDATE zones SET paused = @paused, modified_on = @modified_on, serial = @serial, settings = @settings WHERE id = @id"),
      delZone: db.prepare("DELETE FROM zones WHERE id = ?"),
      recordExists: db.prepare("SELECT 1 FROM records WHERE id = ?"),
      addToCount: db.prepare("UPDATE zones SET record_count = record_count + ? WHERE id = ? RETURNING record_count"),
      firstRecords: db.prepare("SELECT * FROM records WHERE zone_id = ? ORDER BY created_on, id LIMIT ?"),
      nextRecords: db.prepare("SELECT * FROM records WHERE zone_id = ? AND (created_on, id) > (?, ?) ORDER BY created_on, id LIMIT ?"),
      // A record id is only ever replaced within its own zone: the WHERE makes a clash with another zone's record a no-op.
      putRecord: db.prepare(
        `INSERT INTO records (id, zone_id, name, type, content, data, priority, ttl, proxied, comment, tags, settings, created_on, modified_on, comment_modified_on, tags_modified_on)
         VALUES (@id, @zone_id, @name, @type, @content, @data, @priority, @ttl, @proxied, @comment, @tags, @settings, @created_on, @modified_on, @comment_modified_on, @tags_modified_on)
         ON CONFLICT(id) DO UPDATE SET name = excluded.name, type = excluded.type, content = excluded.content, data = excluded.data,
           priority = excluded.priority, ttl = excluded.ttl, proxied = excluded.proxied, comment = excluded.comment, tags = excluded.tags,
           settings = excluded.settings, created_on = excluded.created_on, modified_on = excluded.modified_on,
           comment_modified_on = excluded.comment_modified_on, tags_modified_on = excluded.tags_modified_on
         WHERE records.zone_id = excluded.zone_id`,
      ),
      delRecord: db.prepare("DELETE FROM records WHERE id = ? AND zone_id = ?"),
      getAccount: db.prepare("SELECT settings FROM account_settings WHERE account_id = ?"),
      putAccount: db.prepare("INSERT OR REPLACE INTO account_settings (account_id, settings) VALUES (?, ?)"),
    };
  }

  async listZones(): Promise<Zone[]> {
    return (this.q.listZones.all() as ZoneRow[]).map(zoneFromRow);
  }

  async getZone(id: string): Promise<Zone | undefined> {
    const row = this.q.getZone.get(id) as ZoneRow | undefined;
    return row && zoneFromRow(row);
  }

  async zoneIdsNamed(names: readonly string[]): Promise<string[]> {
    return this.q.zoneIdsNamed.all(JSON.stringify(names)) as string[];
  }

  async listRecords(zoneId: string, page: { after?: string; limit?: number } = {}): Promise<RecordPage> {
    const limit = Math.min(Math.max(1, page.limit ?? DEFAULT_PAGE), MAX_PAGE);
    const cut = page.after?.indexOf(" ") ?? -1;
    const rows = (
      page.after === undefined || cut < 0
        ? this.q.firstRecords.all(zoneId, limit)
        : this.q.nextRecords.all(zoneId, page.after.slice(0, cut), page.after.slice(cut + 1), limit)
    ) as RecordRow[];
    const records = rows.map(recordFromRow);
    return { records, next: records.length === limit ? position(records[records.length - 1]) : undefined };
  }

  async createZone(zone: Zone): Promise<void> {
    this.db.transaction(() => {
      if (this.q.zoneNamed.get(zone.name)) throw DnsErrors.zoneExists(zone.name);
      this.q.insZone.run(zoneRow(zone));
    })();
  }

  async updateZone(zone: Zone, changes: RecordChanges = {}, condition: WriteCondition = {}): Promise<void> {
    const deletes = changes.deletes ?? [];
    const upserts = changes.upserts ?? [];
    /** Records the change adds to the zone (removed ones count minus one), as written. */
    let added = 0;
    const start = () => {
      if (condition.ifSerial !== undefined) {
        const row = this.q.serialOf.get(zone.id) as { serial: number } | undefined;
        if (row && row.serial !== condition.ifSerial) throw new ZoneChangedError(zone.id);
      }
      if (this.q.updZone.run(zoneRow(zone)).changes === 0) throw DnsErrors.zoneNotFound();
    };
    const write = (from: number, to: number) => {
      for (let i = from; i < to; i++) {
        if (i < deletes.length) {
          added -= this.q.delRecord.run(deletes[i], zone.id).changes;
          continue;
        }
        const r = upserts[i - deletes.length];
        if (!this.q.recordExists.get(r.id)) added++;
        // Ids are random; a clash means a bug upstream, and the whole write is refused rather than half done.
        if (r.zone_id !== zone.id || this.q.putRecord.run(recordRow(r)).changes === 0) throw new Error(`record ${r.id} does not belong to zone ${zone.id}`);
      }
    };
    /** Keeps the zone's count of records, refusing (so rolling back) a change that grows it past the limit. */
    const finish = () => {
      if (added === 0) return;
      const { record_count } = this.q.addToCount.get(added, zone.id) as { record_count: number };
      if (condition.maxRecords !== undefined && added > 0 && record_count > condition.maxRecords) throw DnsErrors.recordQuota(condition.maxRecords);
    };
    const rows = deletes.length + upserts.length;
    if (rows <= ROWS_PER_TURN) {
      this.db.transaction(() => {
        start();
        write(0, rows);
        finish();
      })();
      return;
    }
    // A large change (a secondary zone's first transfer of 200,000 records takes seconds to write): one transaction
    // still, so it is all or nothing also across a crash, but written a bounded number of rows per turn of the event
    // loop. Nothing else uses this connection meanwhile: every write comes from ZoneService, one at a time, and its
    // reads of the store happen in the same queue (the API and the server read the zones in memory).
    // A commit that leaves the WAL past the connection's checkpoint backstop (64 MiB, core/db/wal-checkpointer.ts)
    // checkpoints it then and there: half a second on the event loop after 200,000 records. The checkpoint thread
    // copies it back off the loop instead; later commits keep the backstop.
    const backstop = this.db.pragma("wal_autocheckpoint", { simple: true }) as number;
    this.db.pragma("wal_autocheckpoint = 0");
    this.db.exec("BEGIN IMMEDIATE");
    try {
      start();
      for (let from = 0; from < rows; from += ROWS_PER_TURN) {
        write(from, Math.min(rows, from + ROWS_PER_TURN));
        await new Promise<void>((resolve) => setImmediate(resolve));
      }
      finish();
      this.db.exec("COMMIT");
    } catch (err) {
      if (this.db.inTransaction) this.db.exec("ROLLBACK");
      throw err;
    } finally {
      this.db.pragma(`wal_autocheckpoint = ${backstop}`);
    }
  }

  async deleteZone(id: string): Promise<boolean> {
    return this.q.delZone.run(id).changes > 0;
  }

  async accountSettings(accountId: string): Promise<ZoneSettings | undefined> {
    const row = this.q.getAccount.get(accountId) as { settings: string } | undefined;
    return row ? (JSON.parse(row.settings) as ZoneSettings) : undefined;
  }

  async putAccountSettings(accountId: string, settings: ZoneSettings): Promise<void> {
    this.q.putAccount.run(accountId, JSON.stringify(settings));
  }
}
