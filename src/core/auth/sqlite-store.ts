import type { Db } from "../db/sqlite.js";
import { hashSecret, newId } from "./credentials.js";
import type { Account, ApiTokenRecord, Grant, IdentityStore, NewToken, TokenFields, User } from "./store.js";

const nowIso = () => new Date().toISOString();

interface TokenRow extends Omit<ApiTokenRecord, "grants"> {
  grants: string;
  token_hash: string;
}

const toToken = (r: TokenRow): ApiTokenRecord & { token_hash: string } => ({ ...r, grants: JSON.parse(r.grants) as Grant[] });

function withoutHash(r: TokenRow): ApiTokenRecord {
  const { token_hash: _omit, ...rest } = toToken(r);
  return rest;
}

/** The identity store on SQLite (`<state>/db/core.sqlite`, IDENTITY_MIGRATIONS); each call is one statement. */
export class SqliteIdentityStore implements IdentityStore {
  private readonly q;

  constructor(private readonly db: Db) {
    this.q = {
      insAccount: db.prepare("INSERT INTO accounts (id, name, created_on) VALUES (?, ?, ?)"),
      getAccount: db.prepare("SELECT * FROM accounts WHERE id = ?"),
      accountsOfUser: db.prepare("SELECT a.* FROM accounts a JOIN memberships m ON m.account_id = a.id WHERE m.user_id = ? ORDER BY a.created_on, a.id"),
      insUser: db.prepare("INSERT INTO users (id, email, created_on) VALUES (?, ?, ?)"),
      getUser: db.prepare("SELECT * FROM users WHERE id = ?"),
      userByEmail: db.prepare("SELECT * FROM users WHERE email = ?"),
      insMember: db.prepare("INSERT OR IGNORE INTO memberships (user_id, account_id) VALUES (?, ?)"),
      isMember: db.prepare("SELECT 1 FROM memberships WHERE user_id = ? AND account_id = ?"),
      setKey: db.prepare("INSERT INTO global_keys (user_id, key_hash) VALUES (?, ?) ON CONFLICT(user_id) DO UPDATE SET key_hash = excluded.key_hash"),
      getKey: db.prepare("SELECT key_hash FROM global_keys WHERE user_id = ?"),
      insToken: db.prepare(
        `INSERT INTO api_tokens (id, user_id, name, token_hash, status, grants, issued_on, modified_on, not_before, expires_on)
         VALUES (@id, @user_id, @name, @token_hash, 'active', @grants, @now, @now, @not_before, @expires_on)`,
      ),
      tokenByHash: db.prepare("SELECT * FROM api_tokens WHERE token_hash = ?"),
      getToken: db.prepare("SELECT * FROM api_tokens WHERE id = ?"),
      listTokens: db.prepare("SELECT * FROM api_tokens WHERE user_id = ? ORDER BY issued_on, id"),
      updToken: db.prepare(
        `UPDATE api_tokens SET name = @name, grants = @grants, status = @status, not_before = @not_before, expires_on = @expires_on,
         modified_on = @now WHERE id = @id`,
      ),
      rollToken: db.prepare("UPDATE api_tokens SET token_hash = ?, modified_on = ? WHERE id = ?"),
      delToken: db.prepare("DELETE FROM api_tokens WHERE id = ?"),
      touch: db.prepare("UPDATE api_tokens SET last_used_on = ? WHERE id = ?"),
      anyUser: db.prepare("SELECT 1 FROM users LIMIT 1"),
    };
  }

  async createAccount(name: string, id = newId()): Promise<Account> {
    const a = { id, name, created_on: nowIso() };
    this.q.insAccount.run(a.id, a.name, a.created_on);
    return a;
  }
  async getAccount(id: string) {
    return this.q.getAccount.get(id) as Account | undefined;
  }
  async listAccountsOfUser(userId: string) {
    return this.q.accountsOfUser.all(userId) as Account[];
  }
  async createUser(email: string): Promise<User> {
    const u = { id: newId(), email, created_on: nowIso() };
    this.q.insUser.run(u.id, u.email, u.created_on);
    return u;
  }
  async getUser(id: string) {
    return this.q.getUser.get(id) as User | undefined;
  }
  async findUserByEmail(email: string) {
    return this.q.userByEmail.get(email) as User | undefined;
  }
  async addMembership(userId: string, accountId: string) {
    this.q.insMember.run(userId, accountId);
  }
  async isMember(userId: string, accountId: string) {
    return this.q.isMember.get(userId, accountId) !== undefined;
  }
  async setGlobalKey(userId: string, key: string) {
    this.q.setKey.run(userId, hashSecret(key));
  }
  async globalKeyHash(userId: string) {
    return (this.q.getKey.get(userId) as { key_hash: string } | undefined)?.key_hash;
  }
  async createToken(t: NewToken): Promise<ApiTokenRecord> {
    this.q.insToken.run({
      id: t.id,
      user_id: t.user_id,
      name: t.name,
      token_hash: hashSecret(t.value),
      grants: JSON.stringify(t.grants),
      now: nowIso(),
      not_before: t.not_before,
      expires_on: t.expires_on,
    });
    return this.tokenById(t.id)!;
  }
  async findTokenByHash(hash: string) {
    const r = this.q.tokenByHash.get(hash) as TokenRow | undefined;
    return r && toToken(r);
  }
  async findTokenById(id: string) {
    const r = this.q.getToken.get(id) as TokenRow | undefined;
    return r && toToken(r);
  }
  async getToken(id: string): Promise<ApiTokenRecord | undefined> {
    return this.tokenById(id);
  }
  async listTokens(userId: string): Promise<ApiTokenRecord[]> {
    return (this.q.listTokens.all(userId) as TokenRow[]).map(withoutHash);
  }
  async updateToken(id: string, f: TokenFields): Promise<ApiTokenRecord | undefined> {
    const changed = this.q.updToken.run({
      id,
      name: f.name,
      grants: JSON.stringify(f.grants),
      status: f.status,
      not_before: f.not_before,
      expires_on: f.expires_on,
      now: nowIso(),
    });
    return changed.changes > 0 ? this.tokenById(id) : undefined;
  }
  async rollToken(id: string, value: string) {
    return this.q.rollToken.run(hashSecret(value), nowIso(), id).changes > 0;
  }
  async deleteToken(id: string) {
    return this.q.delToken.run(id).changes > 0;
  }
  async touchToken(id: string, when: string) {
    this.q.touch.run(when, id);
  }
  async isEmpty() {
    return this.q.anyUser.get() === undefined;
  }

  private tokenById(id: string): ApiTokenRecord | undefined {
    const r = this.q.getToken.get(id) as TokenRow | undefined;
    return r && withoutHash(r);
  }
}
