import type { Bus } from "../../core/cluster/bus.js";
import type { Postgres, Transaction } from "../../core/db/postgres.js";
import type { SecretBox } from "../../core/secret-box.js";
import { AigErrors } from "../errors.js";
import { newKeyId, PUBLIC_KEY_COLUMNS, toOpenedKey, toProviderKey, type ProviderKeyRow } from "./rows.js";
import { AIG_BUS_AREA, writeNotice } from "../notices.js";
import { providerKeySealContext, type NewProviderKey, type OpenedProviderKey, type ProviderKey, type ProviderKeyStore } from "./store.js";

type PublicRow = Omit<ProviderKeyRow, "account_id" | "secret">;
const WHERE = "account_id = $1 AND gateway_id = $2";

/**
 * Provider keys on PostgreSQL (schema `ai_gateway`). Each change is announced inside its transaction, so every node
 * drops the keys it holds of that gateway when the change commits (and reads them again on the next request that
 * needs one). Adding a key holds its gateway's row (FOR SHARE), so a gateway deleted at the same time takes its keys along.
 */
export class PgProviderKeyStore implements ProviderKeyStore {
  constructor(
    private readonly pg: Postgres,
    private readonly box: SecretBox,
    private readonly bus?: Bus,
  ) {}

  private change<T>(accountId: string, gatewayId: string, fn: (tx: Transaction) => Promise<T>): Promise<T> {
    return this.pg.withTransaction(async (tx) => {
      const result = await fn(tx);
      if (result !== undefined) await this.bus?.publish(AIG_BUS_AREA, writeNotice({ kind: "keys", accountId, gatewayId }), tx);
      return result;
    });
  }

  async list(accountId: string, gatewayId: string): Promise<ProviderKey[]> {
    const rows = await this.pg.rows<PublicRow>(`SELECT ${PUBLIC_KEY_COLUMNS} FROM ai_gateway.provider_keys WHERE ${WHERE} ORDER BY provider_slug, alias`, [
      accountId,
      gatewayId,
    ]);
    return rows.map(toProviderKey);
  }

  async get(accountId: string, gatewayId: string, id: string): Promise<ProviderKey | undefined> {
    const row = await this.pg.row<PublicRow>(`SELECT ${PUBLIC_KEY_COLUMNS} FROM ai_gateway.provider_keys WHERE ${WHERE} AND id = $3`, [
      accountId,
      gatewayId,
      id,
    ]);
    return row && toProviderKey(row);
  }

  create(accountId: string, gatewayId: string, key: NewProviderKey, secret: string, limit: number): Promise<ProviderKey> {
    const id = newKeyId();
    const sealed = this.box.seal(secret, providerKeySealContext(accountId, gatewayId, id));
    return this.change(accountId, gatewayId, async (tx) => {
      if (!(await tx.row("SELECT 1 FROM ai_gateway.gateways WHERE account_id = $1 AND id = $2 FOR SHARE", [accountId, gatewayId])))
        throw AigErrors.gatewayNotFound(gatewayId);
      const n = await tx.row<{ n: string }>(`SELECT count(*) AS n FROM ai_gateway.provider_keys WHERE ${WHERE}`, [accountId, gatewayId]);
      if (Number(n!.n) >= limit) throw AigErrors.tooManyProviderKeys(limit);
      if (key.default_config)
        await tx.execute(`UPDATE ai_gateway.provider_keys SET default_config = 0 WHERE ${WHERE} AND provider_slug = $3`, [
          accountId,
          gatewayId,
          key.provider_slug,
        ]);
      const row = await tx.row<PublicRow>(
        `INSERT INTO ai_gateway.provider_keys (account_id, gateway_id, id, provider_slug, alias, default_config, secret_id, secret, modified_at)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) ON CONFLICT DO NOTHING RETURNING ${PUBLIC_KEY_COLUMNS}`,
        [accountId, gatewayId, id, key.provider_slug, key.alias, key.default_config ? 1 : 0, newKeyId(), sealed, new Date().toISOString()],
      );
      // The transaction rolls back with the error: a default taken from another key above is given back.
      if (!row) throw AigErrors.providerKeyExists(key.provider_slug, key.alias);
      return toProviderKey(row);
    });
  }

  replaceSecret(accountId: string, gatewayId: string, id: string, secret: string): Promise<ProviderKey | undefined> {
    const sealed = this.box.seal(secret, providerKeySealContext(accountId, gatewayId, id));
    return this.change(accountId, gatewayId, async (tx) => {
      const row = await tx.row<PublicRow>(
        `UPDATE ai_gateway.provider_keys SET secret = $4, secret_id = $5, modified_at = $6 WHERE ${WHERE} AND id = $3 RETURNING ${PUBLIC_KEY_COLUMNS}`,
        [accountId, gatewayId, id, sealed, newKeyId(), new Date().toISOString()],
      );
      return row && toProviderKey(row);
    });
  }

  delete(accountId: string, gatewayId: string, id: string): Promise<ProviderKey | undefined> {
    return this.change(accountId, gatewayId, async (tx) => {
      const row = await tx.row<PublicRow>(`DELETE FROM ai_gateway.provider_keys WHERE ${WHERE} AND id = $3 RETURNING ${PUBLIC_KEY_COLUMNS}`, [
        accountId,
        gatewayId,
        id,
      ]);
      return row && toProviderKey(row);
    });
  }

  async opened(accountId: string, gatewayId: string): Promise<OpenedProviderKey[]> {
    const rows = await this.pg.rows<Pick<ProviderKeyRow, "id" | "provider_slug" | "alias" | "default_config" | "secret">>(
      `SELECT id, provider_slug, alias, default_config, secret FROM ai_gateway.provider_keys WHERE ${WHERE}`,
      [accountId, gatewayId],
    );
    return rows.map((r) => toOpenedKey(r, this.box.open(r.secret, providerKeySealContext(accountId, gatewayId, r.id))));
  }
}
