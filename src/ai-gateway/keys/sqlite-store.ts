import type { Db } from "../../core/db/sqlite.js";
import type { SecretBox } from "../../core/secret-box.js";
import { AigErrors } from "../errors.js";
import { newKeyId, PUBLIC_KEY_COLUMNS, toOpenedKey, toProviderKey, type ProviderKeyRow } from "./rows.js";
import { providerKeySealContext, type NewProviderKey, type OpenedProviderKey, type ProviderKey, type ProviderKeyStore } from "./store.js";

type PublicRow = Omit<ProviderKeyRow, "account_id" | "secret">;

/**
 * Provider keys on the AI gateway's SQLite file. Writes take their turn with the log writer thread's batches
 * (`exclusive`, the gateway store's turn-taking) and check the gateway in the same synchronous step, so a key is
 * never added to a gateway being deleted.
 */
export class SqliteProviderKeyStore implements ProviderKeyStore {
  private readonly q;

  constructor(
    private readonly db: Db,
    private readonly box: SecretBox,
    private readonly exclusive: <T>(fn: () => T) => Promise<T>,
  ) {
    const where = "account_id = ? AND gateway_id = ?";
    this.q = {
      list: db.prepare(`SELECT ${PUBLIC_KEY_COLUMNS} FROM provider_keys WHERE ${where} ORDER BY provider_slug, alias`),
      get: db.prepare(`SELECT ${PUBLIC_KEY_COLUMNS} FROM provider_keys WHERE ${where} AND id = ?`),
      sealed: db.prepare(`SELECT id, provider_slug, alias, default_config, secret FROM provider_keys WHERE ${where}`),
      gateway: db.prepare("SELECT 1 FROM gateways WHERE account_id = ? AND id = ?"),
      count: db.prepare(`SELECT count(*) AS n FROM provider_keys WHERE ${where}`),
      taken: db.prepare(`SELECT 1 FROM provider_keys WHERE ${where} AND provider_slug = ? AND alias = ?`),
      undefault: db.prepare(`UPDATE provider_keys SET default_config = 0 WHERE ${where} AND provider_slug = ?`),
      insert: db.prepare(
        "INSERT INTO provider_keys (account_id, gateway_id, id, provider_slug, alias, default_config, secret_id, secret, modified_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
      ),
      replace: db.prepare(`UPDATE provider_keys SET secret = ?, secret_id = ?, modified_at = ? WHERE ${where} AND id = ?`),
      delete: db.prepare(`DELETE FROM provider_keys WHERE ${where} AND id = ?`),
    };
  }

  async list(accountId: string, gatewayId: string): Promise<ProviderKey[]> {
    return (this.q.list.all(accountId, gatewayId) as PublicRow[]).map(toProviderKey);
  }

  async get(accountId: string, gatewayId: string, id: string): Promise<ProviderKey | undefined> {
    return this.read(accountId, gatewayId, id);
  }

  create(accountId: string, gatewayId: string, key: NewProviderKey, secret: string, limit: number): Promise<ProviderKey> {
    const id = newKeyId();
    const sealed = this.box.seal(secret, providerKeySealContext(accountId, gatewayId, id));
    return this.exclusive(() =>
      this.db.transaction(() => {
        if (!this.q.gateway.get(accountId, gatewayId)) throw AigErrors.gatewayNotFound(gatewayId);
        if (this.q.taken.get(accountId, gatewayId, key.provider_slug, key.alias)) throw AigErrors.providerKeyExists(key.provider_slug, key.alias);
        if ((this.q.count.get(accountId, gatewayId) as { n: number }).n >= limit) throw AigErrors.tooManyProviderKeys(limit);
        if (key.default_config) this.q.undefault.run(accountId, gatewayId, key.provider_slug);
        const now = new Date().toISOString();
        this.q.insert.run(accountId, gatewayId, id, key.provider_slug, key.alias, key.default_config ? 1 : 0, newKeyId(), sealed, now);
        return this.read(accountId, gatewayId, id)!;
      })(),
    );
  }

  replaceSecret(accountId: string, gatewayId: string, id: string, secret: string): Promise<ProviderKey | undefined> {
    const sealed = this.box.seal(secret, providerKeySealContext(accountId, gatewayId, id));
    return this.exclusive(() => {
      const changed = this.q.replace.run(sealed, newKeyId(), new Date().toISOString(), accountId, gatewayId, id).changes > 0;
      return changed ? this.read(accountId, gatewayId, id) : undefined;
    });
  }

  delete(accountId: string, gatewayId: string, id: string): Promise<ProviderKey | undefined> {
    return this.exclusive(() => {
      const found = this.read(accountId, gatewayId, id);
      if (found) this.q.delete.run(accountId, gatewayId, id);
      return found;
    });
  }

  async opened(accountId: string, gatewayId: string): Promise<OpenedProviderKey[]> {
    const rows = this.q.sealed.all(accountId, gatewayId) as Pick<ProviderKeyRow, "id" | "provider_slug" | "alias" | "default_config" | "secret">[];
    return rows.map((r) => toOpenedKey(r, this.box.open(r.secret, providerKeySealContext(accountId, gatewayId, r.id))));
  }

  private read(accountId: string, gatewayId: string, id: string): ProviderKey | undefined {
    const row = this.q.get.get(accountId, gatewayId, id) as PublicRow | undefined;
    return row && toProviderKey(row);
  }
}
