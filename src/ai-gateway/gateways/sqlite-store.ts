import type { Db } from "../../core/db/sqlite.js";
import { AigErrors } from "../errors.js";
import { containing, toGateway, type GatewayRow as Row } from "./rows.js";
import type { GatewaySettings } from "./schema.js";
import type { Gateway, GatewayStore } from "./store.js";

/**
 * What the gateway store needs of the log store on the same file (SqliteLogStore): its write turns, and a
 * gateway's logs deleted with the gateway, in the same transaction.
 */
export interface LogsOfGatewayFile {
  exclusive<T>(fn: () => T | Promise<T>): Promise<T>;
  deleteAllOf(accountId: string, gatewayId: string): void;
  forgetCount(accountId: string, gatewayId: string): void;
}

/** Gateways of every account, their settings as one JSON column (a deleted gateway's provider keys go with it). Writes take their turn with the log writes (logs.exclusive). */
export class SqliteGatewayStore implements GatewayStore {
  private readonly q;

  /** `logs` is the store of the same file, whose logs go with a deleted gateway. */
  constructor(
    private readonly db: Db,
    private readonly logs: LogsOfGatewayFile,
  ) {
    this.q = {
      get: db.prepare("SELECT * FROM gateways WHERE account_id = ? AND id = ?"),
      list: db.prepare("SELECT * FROM gateways WHERE account_id = ? AND id LIKE ? ESCAPE '\\' ORDER BY created_at, id LIMIT ? OFFSET ?"),
      count: db.prepare("SELECT count(*) AS n FROM gateways WHERE account_id = ? AND id LIKE ? ESCAPE '\\'"),
      insert: db.prepare("INSERT INTO gateways (account_id, id, settings, created_at, modified_at) VALUES (?, ?, ?, ?, ?) ON CONFLICT DO NOTHING"),
      update: db.prepare("UPDATE gateways SET settings = ?, modified_at = ? WHERE account_id = ? AND id = ?"),
      delete: db.prepare("DELETE FROM gateways WHERE account_id = ? AND id = ?"),
      deleteKeys: db.prepare("DELETE FROM provider_keys WHERE account_id = ? AND gateway_id = ?"),
    };
  }

  private read(accountId: string, id: string): Gateway | undefined {
    const row = this.q.get.get(accountId, id) as Row | undefined;
    return row ? toGateway(row) : undefined;
  }

  async get(accountId: string, id: string): Promise<Gateway | undefined> {
    return this.read(accountId, id);
  }

  async list(accountId: string, search: string, limit: number, offset: number): Promise<{ items: Gateway[]; total: number }> {
    const like = containing(search);
    const items = (this.q.list.all(accountId, like, limit, offset) as Row[]).map(toGateway);
    return { items, total: (this.q.count.get(accountId, like) as { n: number }).n };
  }

  async create(accountId: string, id: string, settings: GatewaySettings): Promise<Gateway> {
    const now = new Date().toISOString();
    const r = await this.logs.exclusive(() => this.q.insert.run(accountId, id, JSON.stringify(settings), now, now));
    if (!r.changes) throw AigErrors.gatewayExists(id);
    return this.read(accountId, id)!;
  }

  async update(accountId: string, id: string, settings: GatewaySettings): Promise<Gateway | undefined> {
    const r = await this.logs.exclusive(() => this.q.update.run(JSON.stringify(settings), new Date().toISOString(), accountId, id));
    return r.changes ? this.read(accountId, id) : undefined;
  }

  async delete(accountId: string, id: string): Promise<Gateway | undefined> {
    return this.logs.exclusive(() => {
      const found = this.read(accountId, id);
      if (!found) return undefined;
      this.db.transaction(() => {
        this.q.delete.run(accountId, id);
        this.q.deleteKeys.run(accountId, id);
        this.logs.deleteAllOf(accountId, id);
      })();
      this.logs.forgetCount(accountId, id);
      return found;
    });
  }
}
