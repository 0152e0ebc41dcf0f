import type { Db, Migration } from "../core/db/sqlite.js";
import type { Gateway, GatewaySettings } from "./gateway-schema.js";

export const gatewayMigrations: Migration[] = [
  `CREATE TABLE gateways (
     account_id TEXT NOT NULL,
     id TEXT NOT NULL,
     settings TEXT NOT NULL,
     created_at TEXT NOT NULL,
     modified_at TEXT NOT NULL,
     PRIMARY KEY (account_id, id)
   );
   CREATE TABLE logs (
     seq INTEGER PRIMARY KEY AUTOINCREMENT,
     id TEXT NOT NULL UNIQUE,
     account_id TEXT NOT NULL,
     gateway_id TEXT NOT NULL,
     created_at TEXT NOT NULL,
     provider TEXT NOT NULL,
     model TEXT,
     path TEXT NOT NULL,
     request_type TEXT,
     status_code INTEGER NOT NULL,
     success INTEGER NOT NULL,
     cached INTEGER NOT NULL,
     step INTEGER,
     duration INTEGER NOT NULL,
     tokens_in INTEGER,
     tokens_out INTEGER,
     cached_tokens INTEGER,
     reasoning_tokens INTEGER,
     cost REAL,
     cost_note TEXT,
     custom_cost INTEGER NOT NULL DEFAULT 0,
     metadata TEXT,
     request_content_type TEXT,
     response_content_type TEXT,
     request_size INTEGER NOT NULL DEFAULT 0,
     response_size INTEGER NOT NULL DEFAULT 0,
     authenticated INTEGER NOT NULL DEFAULT 0,
     event_id TEXT,
     feedback INTEGER,
     score REAL
   );
   CREATE INDEX logs_gateway_time ON logs (account_id, gateway_id, created_at);
   CREATE TABLE log_bodies (
     log_id TEXT PRIMARY KEY REFERENCES logs(id) ON DELETE CASCADE,
     request BLOB,
     response BLOB
   );`,
  // Bodies move into the log row: one insert per log instead of two plus a foreign-key check.
  `ALTER TABLE logs ADD COLUMN request_body BLOB;
   ALTER TABLE logs ADD COLUMN response_body BLOB;
   UPDATE logs SET request_body = (SELECT request FROM log_bodies WHERE log_id = logs.id),
                   response_body = (SELECT response FROM log_bodies WHERE log_id = logs.id);
   DROP TABLE log_bodies;`,
];

interface Row {
  account_id: string;
  id: string;
  settings: string;
  created_at: string;
  modified_at: string;
}

const toGateway = (r: Row): Gateway => ({
  id: r.id,
  account_id: r.account_id,
  ...(JSON.parse(r.settings) as GatewaySettings),
  created_at: r.created_at,
  modified_at: r.modified_at,
});

/**
 * Gateways of every account. The proxy reads a gateway on every request, so reads are served from
 * memory; every write goes through this store and refreshes that copy.
 */
export class GatewayStore {
  private readonly cache = new Map<string, Gateway | null>();
  private readonly q;

  constructor(private readonly db: Db) {
    this.q = {
      get: db.prepare("SELECT * FROM gateways WHERE account_id = ? AND id = ?"),
      list: db.prepare("SELECT * FROM gateways WHERE account_id = ? AND id LIKE ? ESCAPE '\\' ORDER BY created_at, id LIMIT ? OFFSET ?"),
      count: db.prepare("SELECT count(*) AS n FROM gateways WHERE account_id = ? AND id LIKE ? ESCAPE '\\'"),
      insert: db.prepare("INSERT INTO gateways (account_id, id, settings, created_at, modified_at) VALUES (?, ?, ?, ?, ?) ON CONFLICT DO NOTHING"),
      update: db.prepare("UPDATE gateways SET settings = ?, modified_at = ? WHERE account_id = ? AND id = ?"),
      delete: db.prepare("DELETE FROM gateways WHERE account_id = ? AND id = ?"),
    };
  }

  get(accountId: string, id: string): Gateway | undefined {
    const key = `${accountId}/${id}`;
    let g = this.cache.get(key);
    if (g === undefined) {
      const row = this.q.get.get(accountId, id) as Row | undefined;
      g = row ? toGateway(row) : null;
      if (this.cache.size > 10_000) this.cache.clear();
      this.cache.set(key, g);
    }
    return g ?? undefined;
  }

  list(accountId: string, search: string, limit: number, offset: number): { items: Gateway[]; total: number } {
    const like = `%${search.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
    const items = (this.q.list.all(accountId, like, limit, offset) as Row[]).map(toGateway);
    return { items, total: (this.q.count.get(accountId, like) as { n: number }).n };
  }

  /** Creates a gateway; undefined when the id is taken. */
  create(accountId: string, id: string, settings: GatewaySettings): Gateway | undefined {
    const now = new Date().toISOString();
    const r = this.q.insert.run(accountId, id, JSON.stringify(settings), now, now);
    this.cache.delete(`${accountId}/${id}`);
    return r.changes ? this.get(accountId, id) : undefined;
  }

  update(accountId: string, id: string, settings: GatewaySettings): Gateway | undefined {
    const r = this.q.update.run(JSON.stringify(settings), new Date().toISOString(), accountId, id);
    this.cache.delete(`${accountId}/${id}`);
    return r.changes ? this.get(accountId, id) : undefined;
  }

  delete(accountId: string, id: string): Gateway | undefined {
    const g = this.get(accountId, id);
    if (!g) return undefined;
    this.db.transaction(() => {
      this.q.delete.run(accountId, id);
      this.db.prepare("DELETE FROM logs WHERE account_id = ? AND gateway_id = ?").run(accountId, id);
    })();
    this.cache.delete(`${accountId}/${id}`);
    return g;
  }
}
