import { randomUUID } from "node:crypto";
import type { Db } from "../core/db/sqlite.js";
import { D1Errors } from "./errors.js";
import type { D1DatabaseRecord, D1ListOptions, D1Store } from "./store.js";
import { checkDatabaseName, isDatabaseUuid } from "./validation.js";

interface Row {
  uuid: string;
  account_id: string;
  name: string;
  created_at: string;
}

const record = (r: Row): D1DatabaseRecord => ({ uuid: r.uuid, name: r.name, created_at: r.created_at, version: "production" });
const isUniqueViolation = (err: unknown) => (err as { code?: string }).code === "SQLITE_CONSTRAINT_UNIQUE";

/** D1Store on one SQLite file (db/d1.sqlite): the server's, or the state directory's for `--local`. */
export class SqliteD1Store implements D1Store {
  private readonly s;
  private readonly create;

  constructor(
    db: Db,
    /** Databases one account may have; unbounded for `--local` (the state directory is the user's own). */
    private readonly limits: { databasesPerAccount?: number } = {},
  ) {
    this.s = {
      insert: db.prepare("INSERT INTO databases (uuid, account_id, name, created_at) VALUES (?, ?, ?, ?)"),
      get: db.prepare<[string], Row>("SELECT * FROM databases WHERE uuid = ?"),
      list: db.prepare<[string, string | null, string | null, number, number], Row>(
        "SELECT * FROM databases WHERE account_id = ? AND (? IS NULL OR name = ?) ORDER BY name LIMIT ? OFFSET ?",
      ),
      count: db.prepare<[string, string | null, string | null], { n: number }>(
        "SELECT count(*) AS n FROM databases WHERE account_id = ? AND (? IS NULL OR name = ?)",
      ),
      delete: db.prepare("DELETE FROM databases WHERE account_id = ? AND uuid = ?"),
      countAll: db.prepare<[string], { n: number }>("SELECT count(*) AS n FROM databases WHERE account_id = ?"),
    };
    // Counted and inserted in one transaction: two creations at once cannot both take the last place.
    this.create = db.transaction((accountId: string, uuid: string, name: string) => {
      const max = this.limits.databasesPerAccount;
      if (max !== undefined && this.s.countAll.get(accountId)!.n >= max) throw D1Errors.databaseLimit(max);
      return this.insert(accountId, uuid, name);
    });
  }

  private insert(accountId: string, uuid: string, name: string): D1DatabaseRecord {
    const row: Row = { uuid, account_id: accountId, name, created_at: new Date().toISOString() };
    try {
      this.s.insert.run(row.uuid, row.account_id, row.name, row.created_at);
    } catch (err) {
      if (isUniqueViolation(err)) throw D1Errors.nameTaken(name);
      throw err;
    }
    return record(row);
  }

  async createDatabase(accountId: string, name: string): Promise<D1DatabaseRecord> {
    checkDatabaseName(name);
    return this.create(accountId, randomUUID(), name);
  }

  async adoptDatabase(accountId: string, uuid: string, name: string): Promise<D1DatabaseRecord> {
    checkDatabaseName(name);
    if (!isDatabaseUuid(uuid)) throw D1Errors.databaseNotFound();
    const known = this.s.get.get(uuid);
    if (known) {
      if (known.account_id !== accountId) throw D1Errors.databaseNotFound();
      return record(known);
    }
    return this.create(accountId, uuid, name);
  }

  async listDatabases(accountId: string, opts: D1ListOptions = {}): Promise<{ databases: D1DatabaseRecord[]; total: number }> {
    const name = opts.name ?? null;
    const rows = this.s.list.all(accountId, name, name, opts.limit ?? -1, opts.offset ?? 0);
    return { databases: rows.map(record), total: this.s.count.get(accountId, name, name)!.n };
  }

  async getDatabase(accountId: string, uuid: string): Promise<D1DatabaseRecord | undefined> {
    const row = this.s.get.get(uuid);
    return row && row.account_id === accountId ? record(row) : undefined;
  }

  async deleteDatabase(accountId: string, uuid: string): Promise<void> {
    if (this.s.delete.run(accountId, uuid).changes === 0) throw D1Errors.databaseNotFound();
  }
}
