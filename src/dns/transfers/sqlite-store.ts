import type { Db } from "../../core/db/sqlite.js";
import type { SecretBox } from "../../core/secret-box.js";
import { packRrs, unpackRrs, type Incoming, type JournalEntry, type Outgoing, type Peer, type TsigKeyEntry } from "./model.js";
import type { JournalBounds, TransferStore } from "./store.js";

interface JournalRow {
  seq: number;
  from_serial: number;
  to_serial: number;
  from_soa: Buffer;
  to_soa: Buffer;
  removed: Buffer;
  added: Buffer;
  records: number;
}

/** A TSIG secret is sealed to its row: a sealed value copied to another key's row does not open. */
export const tsigSealContext = (id: string) => `dns-tsig:${id}`;

/** Transfer state on SQLite (`<state>/db/dns-transfers.sqlite`, TRANSFER_MIGRATIONS). */
export class SqliteTransferStore implements TransferStore {
  private readonly q;

  constructor(
    private readonly db: Db,
    private readonly box: SecretBox,
  ) {
    this.q = {
      tsigs: db.prepare("SELECT * FROM tsigs ORDER BY rowid"),
      putTsig: db.prepare(
        `INSERT INTO tsigs (id, account_id, name, algorithm, secret_sealed) VALUES (@id, @account_id, @name, @algorithm, @secret_sealed)
         ON CONFLICT(id) DO UPDATE SET name = excluded.name, algorithm = excluded.algorithm, secret_sealed = excluded.secret_sealed`,
      ),
      delTsig: db.prepare("DELETE FROM tsigs WHERE id = ?"),
      peers: db.prepare("SELECT * FROM peers ORDER BY rowid"),
      putPeer: db.prepare(
        `INSERT INTO peers (id, account_id, name, ip, port, tsig_id, ixfr_enable) VALUES (@id, @account_id, @name, @ip, @port, @tsig_id, @ixfr_enable)
         ON CONFLICT(id) DO UPDATE SET name = excluded.name, ip = excluded.ip, port = excluded.port, tsig_id = excluded.tsig_id, ixfr_enable = excluded.ixfr_enable`,
      ),
      delPeer: db.prepare("DELETE FROM peers WHERE id = ?"),
      outgoing: db.prepare("SELECT * FROM outgoing ORDER BY rowid"),
      putOutgoing: db.prepare(
        `INSERT INTO outgoing (zone_id, account_id, peers, enabled, created_time, last_transferred_time)
         VALUES (@zone_id, @account_id, @peers, @enabled, @created_time, @last_transferred_time)
         ON CONFLICT(zone_id) DO UPDATE SET peers = excluded.peers, enabled = excluded.enabled, last_transferred_time = excluded.last_transferred_time`,
      ),
      delOutgoing: db.prepare("DELETE FROM outgoing WHERE zone_id = ?"),
      incoming: db.prepare("SELECT * FROM incoming ORDER BY rowid"),
      putIncoming: db.prepare(
        `INSERT INTO incoming (zone_id, account_id, peers, auto_refresh_seconds, created_time, modified_time, checked_time, last_transferred_time)
         VALUES (@zone_id, @account_id, @peers, @auto_refresh_seconds, @created_time, @modified_time, @checked_time, @last_transferred_time)
         ON CONFLICT(zone_id) DO UPDATE SET peers = excluded.peers, auto_refresh_seconds = excluded.auto_refresh_seconds,
           modified_time = excluded.modified_time, checked_time = excluded.checked_time, last_transferred_time = excluded.last_transferred_time`,
      ),
      delIncoming: db.prepare("DELETE FROM incoming WHERE zone_id = ?"),
      journal: db.prepare("SELECT * FROM journal WHERE zone_id = ? ORDER BY seq"),
      lastSeq: db.prepare("SELECT COALESCE(MAX(seq), 0) AS seq FROM journal WHERE zone_id = ?"),
      addEntry: db.prepare(
        `INSERT INTO journal (zone_id, seq, from_serial, to_serial, from_soa, to_soa, removed, added, records)
         VALUES (@zone_id, @seq, @from_serial, @to_serial, @from_soa, @to_soa, @removed, @added, @records)`,
      ),
      sizes: db.prepare("SELECT seq, records FROM journal WHERE zone_id = ? ORDER BY seq DESC"),
      dropUpTo: db.prepare("DELETE FROM journal WHERE zone_id = ? AND seq <= ?"),
      delJournal: db.prepare("DELETE FROM journal WHERE zone_id = ?"),
    };
  }

  async listTsigs(): Promise<TsigKeyEntry[]> {
    return (this.q.tsigs.all() as (Omit<TsigKeyEntry, "secret"> & { secret_sealed: string })[]).map(({ secret_sealed, ...t }) => ({
      ...t,
      secret: this.box.open(secret_sealed, tsigSealContext(t.id)),
    }));
  }

  async putTsig(t: TsigKeyEntry): Promise<void> {
    const { secret, ...rest } = t;
    this.q.putTsig.run({ ...rest, secret_sealed: this.box.seal(secret, tsigSealContext(t.id)) });
  }

  async deleteTsig(id: string): Promise<void> {
    this.q.delTsig.run(id);
  }

  async listPeers(): Promise<Peer[]> {
    return (this.q.peers.all() as (Omit<Peer, "ixfr_enable"> & { ixfr_enable: number })[]).map((p) => ({ ...p, ixfr_enable: !!p.ixfr_enable }));
  }

  async putPeer(p: Peer): Promise<void> {
    this.q.putPeer.run({ ...p, ixfr_enable: p.ixfr_enable ? 1 : 0 });
  }

  async deletePeer(id: string): Promise<void> {
    this.q.delPeer.run(id);
  }

  async listOutgoing(): Promise<Outgoing[]> {
    return (this.q.outgoing.all() as (Omit<Outgoing, "peers" | "enabled"> & { peers: string; enabled: number })[]).map((o) => ({
      ...o,
      peers: JSON.parse(o.peers) as string[],
      enabled: !!o.enabled,
    }));
  }

  async putOutgoing(o: Outgoing): Promise<void> {
    this.q.putOutgoing.run({ ...o, peers: JSON.stringify(o.peers), enabled: o.enabled ? 1 : 0 });
  }

  async deleteOutgoing(zoneId: string): Promise<void> {
    this.q.delOutgoing.run(zoneId);
  }

  async listIncoming(): Promise<Incoming[]> {
    return (this.q.incoming.all() as (Omit<Incoming, "peers"> & { peers: string })[]).map((i) => ({ ...i, peers: JSON.parse(i.peers) as string[] }));
  }

  async putIncoming(i: Incoming): Promise<void> {
    this.q.putIncoming.run({ ...i, peers: JSON.stringify(i.peers) });
  }

  async deleteIncoming(zoneId: string): Promise<void> {
    this.q.delIncoming.run(zoneId);
  }

  async appendJournal(zoneId: string, e: JournalEntry, bounds: JournalBounds): Promise<void> {
    this.db.transaction(() => {
      const seq = (this.q.lastSeq.get(zoneId) as { seq: number }).seq + 1;
      this.q.addEntry.run({
        zone_id: zoneId,
        seq,
        from_serial: e.from_serial,
        to_serial: e.to_serial,
        from_soa: e.from_soa,
        to_soa: e.to_soa,
        removed: packRrs(e.removed),
        added: packRrs(e.added),
        records: e.removed.length + e.added.length,
      });
      // Keep the newest changes that fit both bounds; everything older goes.
      let entries = 0;
      let records = 0;
      for (const r of this.q.sizes.all(zoneId) as { seq: number; records: number }[]) {
        entries++;
        records += r.records;
        if (entries > bounds.maxEntries || records > bounds.maxRecords) {
          this.q.dropUpTo.run(zoneId, r.seq);
          break;
        }
      }
    })();
  }

  async journal(zoneId: string): Promise<JournalEntry[]> {
    return (this.q.journal.all(zoneId) as JournalRow[]).map((r) => ({
      from_serial: r.from_serial,
      to_serial: r.to_serial,
      from_soa: r.from_soa,
      to_soa: r.to_soa,
      removed: unpackRrs(r.removed),
      added: unpackRrs(r.added),
    }));
  }

  async deleteJournal(zoneId: string): Promise<void> {
    this.q.delJournal.run(zoneId);
  }
}
