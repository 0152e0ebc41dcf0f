import type { Db } from "../../core/db/sqlite.js";
import type { DurableObjectsStore, NamespaceRecord, ScriptDurableObjects } from "./store.js";

interface NamespaceRow {
  id: string;
  account_id: string;
  script: string;
  class_name: string;
  use_sqlite: number;
  unique_key: string;
  created_on: string;
}

const record = (r: NamespaceRow): NamespaceRecord => ({
  id: r.id,
  accountId: r.account_id,
  script: r.script,
  className: r.class_name,
  useSqlite: r.use_sqlite === 1,
  uniqueKey: r.unique_key,
  createdOn: r.created_on,
});

/** DurableObjectsStore on the platform's SQLite (`durable-objects.sqlite`). */
export class SqliteDurableObjectsStore implements DurableObjectsStore {
  constructor(private readonly db: Db) {}

  async ofScript(accountId: string, script: string): Promise<ScriptDurableObjects> {
    const rows = this.db.prepare("SELECT * FROM namespaces WHERE account_id = ? AND script = ? ORDER BY class_name").all(accountId, script) as NamespaceRow[];
    const tag = this.db.prepare("SELECT tag FROM migration_tags WHERE account_id = ? AND script = ?").get(accountId, script) as { tag: string } | undefined;
    return { migrationTag: tag?.tag, namespaces: rows.map(record) };
  }

  async list(accountId: string): Promise<NamespaceRecord[]> {
    return (this.db.prepare("SELECT * FROM namespaces WHERE account_id = ? ORDER BY script, class_name").all(accountId) as NamespaceRow[]).map(record);
  }

  async get(accountId: string, id: string): Promise<NamespaceRecord | undefined> {
    const row = this.db.prepare("SELECT * FROM namespaces WHERE account_id = ? AND id = ?").get(accountId, id) as NamespaceRow | undefined;
    return row && record(row);
  }

  async replace(accountId: string, script: string, state: ScriptDurableObjects): Promise<void> {
    this.db.transaction(() => {
      const keep = new Set(state.namespaces.map((n) => n.id));
      for (const old of this.db.prepare("SELECT id FROM namespaces WHERE account_id = ? AND script = ?").all(accountId, script) as { id: string }[]) {
        if (!keep.has(old.id)) this.db.prepare("DELETE FROM namespaces WHERE id = ?").run(old.id);
      }
      // A rename may swap names between rows: clear the kept rows' names before writing the new ones.
      const upsert = this.db.prepare(
        `INSERT INTO namespaces (id, account_id, script, class_name, use_sqlite, unique_key, created_on) VALUES (?, ?, ?, ?, ?, ?, ?)
         ON CONFLICT (id) DO UPDATE SET class_name = excluded.class_name`,
      );
      for (const n of state.namespaces) this.db.prepare("UPDATE namespaces SET class_name = ? WHERE id = ?").run(`\0${n.id}`, n.id);
      for (const n of state.namespaces) upsert.run(n.id, accountId, script, n.className, n.useSqlite ? 1 : 0, n.uniqueKey, n.createdOn);
      if (state.migrationTag === undefined) this.db.prepare("DELETE FROM migration_tags WHERE account_id = ? AND script = ?").run(accountId, script);
      else
        this.db
          .prepare("INSERT INTO migration_tags (account_id, script, tag) VALUES (?, ?, ?) ON CONFLICT (account_id, script) DO UPDATE SET tag = excluded.tag")
          .run(accountId, script, state.migrationTag);
    })();
  }

  async deleteScript(accountId: string, script: string): Promise<NamespaceRecord[]> {
    return this.db.transaction(() => {
      const rows = this.db.prepare("SELECT * FROM namespaces WHERE account_id = ? AND script = ?").all(accountId, script) as NamespaceRow[];
      this.db.prepare("DELETE FROM namespaces WHERE account_id = ? AND script = ?").run(accountId, script);
      this.db.prepare("DELETE FROM migration_tags WHERE account_id = ? AND script = ?").run(accountId, script);
      return rows.map(record);
    })();
  }
}
