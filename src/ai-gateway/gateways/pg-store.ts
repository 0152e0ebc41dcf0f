import type { Bus } from "../../core/cluster/bus.js";
import type { Postgres, Transaction } from "../../core/db/postgres.js";
import { AigErrors } from "../errors.js";
import { containing, toGateway, type GatewayRow } from "./rows.js";
import type { GatewaySettings } from "./schema.js";
import { AIG_BUS_AREA, writeNotice } from "../notices.js";
import type { Gateway, GatewayStore } from "./store.js";

const COLUMNS = "account_id, id, settings, created_at, modified_at";

/** What the gateway store needs of the log store (PgLogStore): a gateway's logs deleted in the gateway's transaction. */
export interface LogsOfGatewaySchema {
  deleteAllOf(tx: Transaction, accountId: string, gatewayId: string): Promise<void>;
}

export class PgGatewayStore implements GatewayStore {
  constructor(
    private readonly pg: Postgres,
    private readonly logs: LogsOfGatewaySchema,
    private readonly bus?: Bus,
  ) {}

  /** Runs a change of one gateway and announces it in the same transaction (only a committed change is heard). */
  private change<T>(accountId: string, id: string, dropAnswers: (result: T) => boolean, fn: (tx: Transaction) => Promise<T>): Promise<T> {
    return this.pg.withTransaction(async (tx) => {
      const result = await fn(tx);
      if (result !== undefined)
        await this.bus?.publish(AIG_BUS_AREA, writeNotice({ kind: "gateway", accountId, gatewayId: id, dropAnswers: dropAnswers(result) }), tx);
      return result;
    });
  }

  async get(accountId: string, id: string): Promise<Gateway | undefined> {
    const row = await this.pg.row<GatewayRow>(`SELECT ${COLUMNS} FROM ai_gateway.gateways WHERE account_id = $1 AND id = $2`, [accountId, id]);
    return row && toGateway(row);
  }

  async list(accountId: string, search: string, limit: number, offset: number): Promise<{ items: Gateway[]; total: number }> {
    const like = containing(search);
    const where = "account_id = $1 AND id LIKE $2 ESCAPE '\\'";
    const [rows, total] = await Promise.all([
      this.pg.rows<GatewayRow>(`SELECT ${COLUMNS} FROM ai_gateway.gateways WHERE ${where} ORDER BY created_at, id LIMIT $3 OFFSET $4`, [
        accountId,
        like,
        limit,
        offset,
      ]),
      this.pg.row<{ n: string }>(`SELECT count(*) AS n FROM ai_gateway.gateways WHERE ${where}`, [accountId, like]),
    ]);
    return { items: rows.map(toGateway), total: Number(total!.n) };
  }

  async create(accountId: string, id: string, settings: GatewaySettings): Promise<Gateway> {
    const now = new Date().toISOString();
    // A node may have cached that the id did not exist: the notice makes it look again.
    const made = await this.change(
      accountId,
      id,
      () => false,
      (tx) =>
        tx.row<GatewayRow>(`INSERT INTO ai_gateway.gateways (${COLUMNS}) VALUES ($1, $2, $3, $4, $4) ON CONFLICT DO NOTHING RETURNING ${COLUMNS}`, [
          accountId,
          id,
          JSON.stringify(settings),
          now,
        ]),
    );
    if (!made) throw AigErrors.gatewayExists(id);
    return toGateway(made);
  }

  async update(accountId: string, id: string, settings: GatewaySettings): Promise<Gateway | undefined> {
    const row = await this.change(
      accountId,
      id,
      () => settings.cache_invalidate_on_update,
      (tx) =>
        tx.row<GatewayRow>(`UPDATE ai_gateway.gateways SET settings = $3, modified_at = $4 WHERE account_id = $1 AND id = $2 RETURNING ${COLUMNS}`, [
          accountId,
          id,
          JSON.stringify(settings),
          new Date().toISOString(),
        ]),
    );
    return row && toGateway(row);
  }

  async delete(accountId: string, id: string): Promise<Gateway | undefined> {
    const row = await this.change(
      accountId,
      id,
      () => true,
      async (tx) => {
        const gone = await tx.row<GatewayRow>(`DELETE FROM ai_gateway.gateways WHERE account_id = $1 AND id = $2 RETURNING ${COLUMNS}`, [accountId, id]);
        if (gone) {
          await this.logs.deleteAllOf(tx, accountId, id);
          await tx.execute("DELETE FROM ai_gateway.provider_keys WHERE account_id = $1 AND gateway_id = $2", [accountId, id]);
          await tx.execute("DELETE FROM ai_gateway.rate_windows WHERE account_id = $1 AND gateway_id = $2", [accountId, id]);
        }
        return gone;
      },
    );
    return row && toGateway(row);
  }
}
