import type { Bus } from "../core/cluster/bus.js";
import type { Postgres, Transaction } from "../core/db/postgres.js";
import { DnsErrors } from "./errors.js";
import type { DnsRecord, Zone, ZoneSettings } from "./model.js";
import { ZoneChangedError, type DnsStore, type RecordChanges, type RecordPage, type WriteCondition } from "./store.js";
import { DNS_BUS_AREA, zoneChangeNotice } from "./zones/zone-sync.js";

interface ZoneRow extends Omit<Zone, "serial" | "settings"> {
  /** BIGINT comes back as a string from `pg`. */
  serial: string;
  settings: string;
}
interface RecordRow extends Omit<DnsRecord, "data" | "tags" | "settings"> {
  data: string | null;
  tags: string;
  settings: string;
}

const zoneFromRow = (r: ZoneRow): Zone => ({ ...r, serial: Number(r.serial), settings: JSON.parse(r.settings) as ZoneSettings });
const recordFromRow = (r: RecordRow): DnsRecord => ({
  ...r,
  data: r.data === null ? null : (JSON.parse(r.data) as Record<string, unknown>),
  tags: JSON.parse(r.tags) as string[],
  settings: JSON.parse(r.settings) as DnsRecord["settings"],
});

const ZONE_COLUMNS = "id, account_id, name, paused, created_on, modified_on, activated_on, serial, settings";
const RECORD_COLUMNS =
  "id, zone_id, name, type, content, data, priority, ttl, proxied, comment, tags, settings, created_on, modified_on, comment_modified_on, tags_modified_on";
const DEFAULT_PAGE = 1000;
const MAX_PAGE = 10_000;
/** Records written per statement: an import of 100 000 records is a few dozen statements, not 100 000. */
const UPSERT_CHUNK = 2000;
/** A page position, as SQLite's: the creation time and id of the last record of the previous page. */
const position = (r: DnsRecord) => `${r.created_on} ${r.id}`;
const isCode = (err: unknown, code: string) => (err as { code?: unknown }).code === code;

/**
 * Upserts of one zone's records: one row per record from parallel arrays (unnest), so a chunk is one statement.
 * A record id is only ever replaced within its own zone: the WHERE makes a clash with another zone's record a
 * no-op, which the caller sees as a missing id in RETURNING.
 */
const UPSERT_RECORDS = `INSERT INTO dns.records AS r (${RECORD_COLUMNS})
  SELECT u.id, $2, u.name, u.type, u.content, u.data, u.priority, u.ttl, u.proxied, u.comment, u.tags, u.settings,
         u.created_on, u.modified_on, u.comment_modified_on, u.tags_modified_on
  FROM unnest($1::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::int[], $8::int[], $9::bool[], $10::text[],
              $11::text[], $12::text[], $13::text[], $14::text[], $15::text[], $16::text[])
       AS u(id, name, type, content, data, priority, ttl, proxied, comment, tags, settings, created_on, modified_on, comment_modified_on, tags_modified_on)
  ON CONFLICT (id) DO UPDATE SET name = excluded.name, type = excluded.type, content = excluded.content, data = excluded.data,
    priority = excluded.priority, ttl = excluded.ttl, proxied = excluded.proxied, comment = excluded.comment, tags = excluded.tags,
    settings = excluded.settings, created_on = excluded.created_on, modified_on = excluded.modified_on,
    comment_modified_on = excluded.comment_modified_on, tags_modified_on = excluded.tags_modified_on
  WHERE r.zone_id = excluded.zone_id
  RETURNING r.id`;

/** The parameters of UPSERT_RECORDS for `records` of zone `zoneId`. */
function upsertParams(zoneId: string, records: readonly DnsRecord[]): unknown[] {
  const column = <T>(f: (r: DnsRecord) => T) => records.map(f);
  return [
    column((r) => r.id),
    zoneId,
    column((r) => r.name),
    column((r) => r.type),
    column((r) => r.content),
    column((r) => (r.data === null ? null : JSON.stringify(r.data))),
    column((r) => r.priority),
    column((r) => r.ttl),
    column((r) => r.proxied),
    column((r) => r.comment),
    column((r) => JSON.stringify(r.tags)),
    column((r) => JSON.stringify(r.settings)),
    column((r) => r.created_on),
    column((r) => r.modified_on),
    column((r) => r.comment_modified_on),
    column((r) => r.tags_modified_on),
  ];
}

/**
 * The DNS store on PostgreSQL (schema `dns`, DNS_PG_MIGRATIONS), shared by every node. Each node answers from its
 * own copy of the zones in memory (zones/zone-service.ts): every write that changes a zone announces `zone:<id>` on
 * the bus inside its transaction, so the notice goes out exactly when the change commits, and the other nodes
 * reload that zone (zones/zone-sync.ts). Serials are stored with the zone, so every node serves the one stored.
 */
export class PgDnsStore implements DnsStore {
  constructor(
    private readonly pg: Postgres,
    private readonly bus?: Pick<Bus, "publish">,
  ) {}

  async listZones(): Promise<Zone[]> {
    return (await this.pg.rows<ZoneRow>(`SELECT ${ZONE_COLUMNS} FROM dns.zones ORDER BY name`)).map(zoneFromRow);
  }

  async getZone(id: string): Promise<Zone | undefined> {
    const row = await this.pg.row<ZoneRow>(`SELECT ${ZONE_COLUMNS} FROM dns.zones WHERE id = $1`, [id]);
    return row && zoneFromRow(row);
  }

  async zoneIdsNamed(names: readonly string[]): Promise<string[]> {
    return (await this.pg.rows<{ id: string }>("SELECT id FROM dns.zones WHERE name = ANY($1::text[])", [names])).map((r) => r.id);
  }

  async listRecords(zoneId: string, page: { after?: string; limit?: number } = {}): Promise<RecordPage> {
    const limit = Math.min(Math.max(1, page.limit ?? DEFAULT_PAGE), MAX_PAGE);
    const cut = page.after?.indexOf(" ") ?? -1;
    const rows =
      page.after === undefined || cut < 0
        ? await this.pg.rows<RecordRow>(`SELECT ${RECORD_COLUMNS} FROM dns.records WHERE zone_id = $1 ORDER BY created_on, id LIMIT $2`, [zoneId, limit])
        : await this.pg.rows<RecordRow>(
            `SELECT ${RECORD_COLUMNS} FROM dns.records WHERE zone_id = $1 AND (created_on, id) > ($2, $3) ORDER BY created_on, id LIMIT $4`,
            [zoneId, page.after.slice(0, cut), page.after.slice(cut + 1), limit],
          );
    const records = rows.map(recordFromRow);
    return { records, next: records.length === limit ? position(records[records.length - 1]) : undefined };
  }

  async createZone(zone: Zone): Promise<void> {
    try {
      await this.pg.withTransaction(async (tx) => {
        await tx.execute(`INSERT INTO dns.zones (${ZONE_COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`, [
          zone.id,
          zone.account_id,
          zone.name,
          zone.paused,
          zone.created_on,
          zone.modified_on,
          zone.activated_on,
          zone.serial,
          JSON.stringify(zone.settings),
        ]);
        await this.announce(tx, zone.id);
      });
    } catch (err) {
      if (isCode(err, "23505")) throw DnsErrors.zoneExists(zone.name);
      throw err;
    }
  }

  async updateZone(zone: Zone, changes: RecordChanges = {}, condition: WriteCondition = {}): Promise<void> {
    // The last write of an id wins, as in SQLite (a statement may not upsert one row twice).
    const upserts = [...new Map((changes.upserts ?? []).map((r) => [r.id, r])).values()];
    // Ids are random; a clash means a bug upstream, and the whole write is refused rather than half done.
    const foreign = upserts.find((r) => r.zone_id !== zone.id);
    if (foreign) throw new Error(`record ${foreign.id} does not belong to zone ${zone.id}`);
    await this.pg.withTransaction(async (tx) => {
      // Locked until the commit: writers of one zone, on any node, take turns, and each sees the serial the last left.
      const stored = await tx.row<{ serial: string }>("SELECT serial FROM dns.zones WHERE id = $1 FOR UPDATE", [zone.id]);
      if (!stored) throw DnsErrors.zoneNotFound();
      if (condition.ifSerial !== undefined && Number(stored.serial) !== condition.ifSerial) throw new ZoneChangedError(zone.id);
      await tx.execute("UPDATE dns.zones SET paused = $2, modified_on = $3, serial = $4, settings = $5 WHERE id = $1", [
        zone.id,
        zone.paused,
        zone.modified_on,
        zone.serial,
        JSON.stringify(zone.settings),
      ]);
      /** Records the change adds to the zone (removed ones count minus one), as written. */
      let added = 0;
      if (changes.deletes?.length) added -= await tx.execute("DELETE FROM dns.records WHERE zone_id = $1 AND id = ANY($2::text[])", [zone.id, changes.deletes]);
      for (let i = 0; i < upserts.length; i += UPSERT_CHUNK) {
        const chunk = upserts.slice(i, i + UPSERT_CHUNK);
        // The zone's row is locked (above), so no other writer adds or removes its records before the upsert.
        const existing = await tx.row<{ n: string }>("SELECT count(*) AS n FROM dns.records WHERE id = ANY($1::text[])", [chunk.map((r) => r.id)]);
        added += chunk.length - Number(existing?.n ?? 0);
        const written = await tx.rows<{ id: string }>(UPSERT_RECORDS, upsertParams(zone.id, chunk));
        if (written.length !== chunk.length) {
          const ids = new Set(written.map((w) => w.id));
          throw new Error(`record ${chunk.find((r) => !ids.has(r.id))?.id} does not belong to zone ${zone.id}`);
        }
      }
      if (added !== 0) {
        // In the transaction that holds the zone's row: every node's writers of the zone take turns here, so the
        // count is checked and kept as one step; a refusal rolls back every record written above.
        const counted = await tx.row<{ record_count: number }>("UPDATE dns.zones SET record_count = record_count + $2 WHERE id = $1 RETURNING record_count", [
          zone.id,
          added,
        ]);
        if (condition.maxRecords !== undefined && added > 0 && counted!.record_count > condition.maxRecords) throw DnsErrors.recordQuota(condition.maxRecords);
      }
      await this.announce(tx, zone.id);
    });
  }

  async deleteZone(id: string): Promise<boolean> {
    return this.pg.withTransaction(async (tx) => {
      if ((await tx.execute("DELETE FROM dns.zones WHERE id = $1", [id])) === 0) return false;
      await this.announce(tx, id);
      return true;
    });
  }

  async accountSettings(accountId: string): Promise<ZoneSettings | undefined> {
    const row = await this.pg.row<{ settings: string }>("SELECT settings FROM dns.account_settings WHERE account_id = $1", [accountId]);
    return row ? (JSON.parse(row.settings) as ZoneSettings) : undefined;
  }

  /** Not cached by any node (read at each zone creation), so nothing to announce. */
  async putAccountSettings(accountId: string, settings: ZoneSettings): Promise<void> {
    await this.pg.execute(
      "INSERT INTO dns.account_settings (account_id, settings) VALUES ($1, $2) ON CONFLICT (account_id) DO UPDATE SET settings = excluded.settings",
      [accountId, JSON.stringify(settings)],
    );
  }

  /** Tells every node, when `tx` commits, that zone `id` changed (its id only: they read it from here). */
  private async announce(tx: Transaction, id: string): Promise<void> {
    await this.bus?.publish(DNS_BUS_AREA, zoneChangeNotice(id), tx);
  }
}
