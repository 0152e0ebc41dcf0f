import type { Db, Migration } from "../db/sqlite.js";
import { hashSecret, newId } from "./credentials.js";
import type { Permission } from "./permissions.js";

export interface Account {
  id: string;
  name: string;
  created_on: string;
}

export interface User {
  id: string;
  email: string;
  created_on: string;
}

/**
 * One grant of a token: permissions on one concrete account. Requests may say `*`; it is resolved to the
 * creator's accounts before a token is stored (token-grants.ts), so a stored token never widens.
 */
export interface Grant {
  account_id: string;
  permissions: Permission[];
}

export interface ApiTokenRecord {
  id: string;
  user_id: string;
  name: string;
  status: "active" | "disabled";
  grants: Grant[];
  issued_on: string;
  modified_on: string;
  last_used_on: string | null;
  not_before: string | null;
  expires_on: string | null;
}

export type TokenFields = Pick<ApiTokenRecord, "name" | "grants" | "status" | "not_before" | "expires_on">;

/** What the platform keeps about identities. A PostgreSQL implementation would provide the same. */
export interface IdentityStore {
  createAccount(name: string, id?: string): Account;
  getAccount(id: string): Account | undefined;
  listAccountsOfUser(userId: string): Account[];
  createUser(email: string): User;
  getUser(id: string): User | undefined;
  findUserByEmail(email: string): User | undefined;
  addMembership(userId: string, accountId: string): void;
  isMember(userId: string, accountId: string): boolean;
  setGlobalKey(userId: string, key: string): void;
  globalKeyHash(userId: string): string | undefined;
  createToken(t: Omit<ApiTokenRecord, "issued_on" | "modified_on" | "last_used_on" | "status"> & { value: string }): ApiTokenRecord;
  findTokenByHash(hash: string): (ApiTokenRecord & { token_hash: string }) | undefined;
  /** A token with its stored hash, by id: the hash is the token's S3 secret access key (SigV4 signs with it). */
  findTokenById(id: string): (ApiTokenRecord & { token_hash: string }) | undefined;
  getToken(id: string): ApiTokenRecord | undefined;
  listTokens(userId: string): ApiTokenRecord[];
  /** Replaces what an update may change; undefined when there is no such token. */
  updateToken(id: string, fields: TokenFields): ApiTokenRecord | undefined;
  /** Gives the token a new secret (the old one stops working); false when there is no such token. */
  rollToken(id: string, value: string): boolean;
  deleteToken(id: string): boolean;
  touchToken(id: string, when: string): void;
  isEmpty(): boolean;
}

export const identityMigrations: Migration[] = [
  `CREATE TABLE accounts (id TEXT PRIMARY KEY, name TEXT NOT NULL, created_on TEXT NOT NULL);
   CREATE TABLE users (id TEXT PRIMARY KEY, email TEXT NOT NULL UNIQUE COLLATE NOCASE, created_on TEXT NOT NULL);
   CREATE TABLE memberships (user_id TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
     account_id TEXT NOT NULL REFERENCES accounts(id) ON DELETE CASCADE, PRIMARY KEY (user_id, account_id));
   CREATE TABLE global_keys (user_id TEXT PRIMARY KEY REFERENCES users(id) ON DELETE CASCADE, key_hash TEXT NOT NULL);
   CREATE TABLE api_tokens (id TEXT PRIMARY KEY, user_id TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
     name TEXT NOT NULL, token_hash TEXT NOT NULL UNIQUE, status TEXT NOT NULL, grants TEXT NOT NULL,
     issued_on TEXT NOT NULL, modified_on TEXT NOT NULL, last_used_on TEXT, not_before TEXT, expires_on TEXT);
   CREATE INDEX api_tokens_user ON api_tokens(user_id);`,
  resolveStoredWildcards,
];

/**
 * Tokens stored before grants were resolved at creation may hold `account_id: "*"`, which used to mean "every
 * account of the user, now and later". Each such grant becomes one grant per account the owner is a member of
 * at upgrade: the token keeps exactly the reach it had that day, and an account the user joins later no longer
 * widens it. (The creator of such a token is not recorded, so the upgrade cannot narrow it further; the docs ask
 * operators to review tokens listed by the global key after upgrading.)
 */
function resolveStoredWildcards(db: Db): void {
  const tokens = db.prepare("SELECT id, user_id, grants FROM api_tokens").all() as { id: string; user_id: string; grants: string }[];
  const memberships = db.prepare(
    "SELECT m.account_id FROM memberships m JOIN accounts a ON a.id = m.account_id WHERE m.user_id = ? ORDER BY a.created_on, a.id",
  );
  const update = db.prepare("UPDATE api_tokens SET grants = ? WHERE id = ?");
  for (const t of tokens) {
    const grants = JSON.parse(t.grants) as Grant[];
    if (!grants.some((g) => g.account_id === "*")) continue;
    const accounts = (memberships.all(t.user_id) as { account_id: string }[]).map((m) => m.account_id);
    const resolved = grants.flatMap((g) => (g.account_id === "*" ? accounts.map((account_id) => ({ account_id, permissions: g.permissions })) : [g]));
    update.run(JSON.stringify(resolved), t.id);
  }
}

const nowIso = () => new Date().toISOString();

interface TokenRow extends Omit<ApiTokenRecord, "grants"> {
  grants: string;
  token_hash: string;
}

const toToken = (r: TokenRow): ApiTokenRecord & { token_hash: string } => ({ ...r, grants: JSON.parse(r.grants) as Grant[] });

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

  createAccount(name: string, id = newId()): Account {
    const a = { id, name, created_on: nowIso() };
    this.q.insAccount.run(a.id, a.name, a.created_on);
    return a;
  }
  getAccount(id: string) {
    return this.q.getAccount.get(id) as Account | undefined;
  }
  listAccountsOfUser(userId: string) {
    return this.q.accountsOfUser.all(userId) as Account[];
  }
  createUser(email: string): User {
    const u = { id: newId(), email, created_on: nowIso() };
    this.q.insUser.run(u.id, u.email, u.created_on);
    return u;
  }
  getUser(id: string) {
    return this.q.getUser.get(id) as User | undefined;
  }
  findUserByEmail(email: string) {
    return this.q.userByEmail.get(email) as User | undefined;
  }
  addMembership(userId: string, accountId: string) {
    this.q.insMember.run(userId, accountId);
  }
  isMember(userId: string, accountId: string) {
    return this.q.isMember.get(userId, accountId) !== undefined;
  }
  setGlobalKey(userId: string, key: string) {
    this.q.setKey.run(userId, hashSecret(key));
  }
  globalKeyHash(userId: string) {
    return (this.q.getKey.get(userId) as { key_hash: string } | undefined)?.key_hash;
  }
  createToken(t: Omit<ApiTokenRecord, "issued_on" | "modified_on" | "last_used_on" | "status"> & { value: string }): ApiTokenRecord {
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
    return this.getToken(t.id)!;
  }
  findTokenByHash(hash: string) {
    const r = this.q.tokenByHash.get(hash) as TokenRow | undefined;
    return r && toToken(r);
  }
  findTokenById(id: string) {
    const r = this.q.getToken.get(id) as TokenRow | undefined;
    return r && toToken(r);
  }
  getToken(id: string): ApiTokenRecord | undefined {
    const r = this.q.getToken.get(id) as TokenRow | undefined;
    if (!r) return undefined;
    const { token_hash: _omit, ...rest } = toToken(r);
    return rest;
  }
  listTokens(userId: string): ApiTokenRecord[] {
    return (this.q.listTokens.all(userId) as TokenRow[]).map((r) => {
      const { token_hash: _omit, ...rest } = toToken(r);
      return rest;
    });
  }
  updateToken(id: string, f: TokenFields): ApiTokenRecord | undefined {
    const changed = this.q.updToken.run({
      id,
      name: f.name,
      grants: JSON.stringify(f.grants),
      status: f.status,
      not_before: f.not_before,
      expires_on: f.expires_on,
      now: nowIso(),
    });
    return changed.changes > 0 ? this.getToken(id) : undefined;
  }
  rollToken(id: string, value: string) {
    return this.q.rollToken.run(hashSecret(value), nowIso(), id).changes > 0;
  }
  deleteToken(id: string) {
    return this.q.delToken.run(id).changes > 0;
  }
  touchToken(id: string, when: string) {
    this.q.touch.run(when, id);
  }
  isEmpty() {
    return this.q.anyUser.get() === undefined;
  }
}
