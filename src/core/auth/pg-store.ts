import type { Postgres } from "../db/postgres.js";
import { hashSecret, newId } from "./credentials.js";
import type { Account, ApiTokenRecord, IdentityStore, NewToken, TokenFields, User } from "./store.js";

const nowIso = () => new Date().toISOString();

type TokenRow = ApiTokenRecord & { token_hash: string };

function withoutHash(r: TokenRow): ApiTokenRecord {
  const { token_hash: _omit, ...rest } = r;
  return rest;
}

const TOKEN_COLUMNS = "id, user_id, name, token_hash, status, grants, issued_on, modified_on, last_used_on, not_before, expires_on";

/** The identity store on PostgreSQL (schema `core`, IDENTITY_PG_MIGRATIONS); each call is one statement. */
export class PgIdentityStore implements IdentityStore {
  constructor(private readonly pg: Postgres) {}

  async createAccount(name: string, id = newId()): Promise<Account> {
    const a = { id, name, created_on: nowIso() };
    await this.pg.execute("INSERT INTO core.accounts (id, name, created_on) VALUES ($1, $2, $3)", [a.id, a.name, a.created_on]);
    return a;
  }
  getAccount(id: string) {
    return this.pg.row<Account>("SELECT id, name, created_on FROM core.accounts WHERE id = $1", [id]);
  }
  listAccountsOfUser(userId: string) {
    return this.pg.rows<Account>(
      "SELECT a.id, a.name, a.created_on FROM core.accounts a JOIN core.memberships m ON m.account_id = a.id WHERE m.user_id = $1 ORDER BY a.created_on, a.id",
      [userId],
    );
  }
  async createUser(email: string): Promise<User> {
    const u = { id: newId(), email, created_on: nowIso() };
    await this.pg.execute("INSERT INTO core.users (id, email, created_on) VALUES ($1, $2, $3)", [u.id, u.email, u.created_on]);
    return u;
  }
  getUser(id: string) {
    return this.pg.row<User>("SELECT id, email, created_on FROM core.users WHERE id = $1", [id]);
  }
  findUserByEmail(email: string) {
    return this.pg.row<User>("SELECT id, email, created_on FROM core.users WHERE lower(email) = lower($1)", [email]);
  }
  async addMembership(userId: string, accountId: string) {
    await this.pg.execute("INSERT INTO core.memberships (user_id, account_id) VALUES ($1, $2) ON CONFLICT DO NOTHING", [userId, accountId]);
  }
  async isMember(userId: string, accountId: string) {
    return (await this.pg.row("SELECT 1 FROM core.memberships WHERE user_id = $1 AND account_id = $2", [userId, accountId])) !== undefined;
  }
  async setGlobalKey(userId: string, key: string) {
    await this.pg.execute("INSERT INTO core.global_keys (user_id, key_hash) VALUES ($1, $2) ON CONFLICT (user_id) DO UPDATE SET key_hash = excluded.key_hash", [
      userId,
      hashSecret(key),
    ]);
  }
  async globalKeyHash(userId: string) {
    return (await this.pg.row<{ key_hash: string }>("SELECT key_hash FROM core.global_keys WHERE user_id = $1", [userId]))?.key_hash;
  }
  async createToken(t: NewToken): Promise<ApiTokenRecord> {
    const now = nowIso();
    const row = await this.pg.row<TokenRow>(
      `INSERT INTO core.api_tokens (id, user_id, name, token_hash, status, grants, issued_on, modified_on, not_before, expires_on)
       VALUES ($1, $2, $3, $4, 'active', $5, $6, $6, $7, $8) RETURNING ${TOKEN_COLUMNS}`,
      [t.id, t.user_id, t.name, hashSecret(t.value), JSON.stringify(t.grants), now, t.not_before, t.expires_on],
    );
    return withoutHash(row!);
  }
  findTokenByHash(hash: string) {
    return this.pg.row<TokenRow>(`SELECT ${TOKEN_COLUMNS} FROM core.api_tokens WHERE token_hash = $1`, [hash]);
  }
  findTokenById(id: string) {
    return this.pg.row<TokenRow>(`SELECT ${TOKEN_COLUMNS} FROM core.api_tokens WHERE id = $1`, [id]);
  }
  async getToken(id: string): Promise<ApiTokenRecord | undefined> {
    const r = await this.pg.row<TokenRow>(`SELECT ${TOKEN_COLUMNS} FROM core.api_tokens WHERE id = $1`, [id]);
    return r && withoutHash(r);
  }
  async listTokens(userId: string): Promise<ApiTokenRecord[]> {
    return (await this.pg.rows<TokenRow>(`SELECT ${TOKEN_COLUMNS} FROM core.api_tokens WHERE user_id = $1 ORDER BY issued_on, id`, [userId])).map(withoutHash);
  }
  async updateToken(id: string, f: TokenFields): Promise<ApiTokenRecord | undefined> {
    const r = await this.pg.row<TokenRow>(
      `UPDATE core.api_tokens SET name = $2, grants = $3, status = $4, not_before = $5, expires_on = $6, modified_on = $7
       WHERE id = $1 RETURNING ${TOKEN_COLUMNS}`,
      [id, f.name, JSON.stringify(f.grants), f.status, f.not_before, f.expires_on, nowIso()],
    );
    return r && withoutHash(r);
  }
  async rollToken(id: string, value: string) {
    return (await this.pg.execute("UPDATE core.api_tokens SET token_hash = $1, modified_on = $2 WHERE id = $3", [hashSecret(value), nowIso(), id])) > 0;
  }
  async deleteToken(id: string) {
    return (await this.pg.execute("DELETE FROM core.api_tokens WHERE id = $1", [id])) > 0;
  }
  async touchToken(id: string, when: string) {
    await this.pg.execute("UPDATE core.api_tokens SET last_used_on = $1 WHERE id = $2", [when, id]);
  }
  async isEmpty() {
    return (await this.pg.row("SELECT 1 FROM core.users LIMIT 1")) === undefined;
  }
}
