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

/** What a new token is made of; the store keeps only the hash of `value`. */
export type NewToken = Omit<ApiTokenRecord, "issued_on" | "modified_on" | "last_used_on" | "status"> & { value: string };

/**
 * What the platform keeps about identities: accounts, users, memberships, global keys and API tokens. Every method
 * is asynchronous so that a database server can implement it (sqlite-store.ts is the SQLite implementation); the
 * auth service caches what it reads per credential, so a known credential costs no call here.
 */
export interface IdentityStore {
  createAccount(name: string, id?: string): Promise<Account>;
  getAccount(id: string): Promise<Account | undefined>;
  /** The user's accounts, oldest first. */
  listAccountsOfUser(userId: string): Promise<Account[]>;
  createUser(email: string): Promise<User>;
  getUser(id: string): Promise<User | undefined>;
  /** Emails compare without case. */
  findUserByEmail(email: string): Promise<User | undefined>;
  /** Idempotent. */
  addMembership(userId: string, accountId: string): Promise<void>;
  isMember(userId: string, accountId: string): Promise<boolean>;
  /** Keeps the hash of `key` only; a second call replaces the key. */
  setGlobalKey(userId: string, key: string): Promise<void>;
  globalKeyHash(userId: string): Promise<string | undefined>;
  createToken(t: NewToken): Promise<ApiTokenRecord>;
  findTokenByHash(hash: string): Promise<(ApiTokenRecord & { token_hash: string }) | undefined>;
  /** A token with its stored hash, by id: the hash is the token's S3 secret access key (SigV4 signs with it). */
  findTokenById(id: string): Promise<(ApiTokenRecord & { token_hash: string }) | undefined>;
  getToken(id: string): Promise<ApiTokenRecord | undefined>;
  /** The user's tokens, oldest first. */
  listTokens(userId: string): Promise<ApiTokenRecord[]>;
  /** Replaces what an update may change; undefined when there is no such token. */
  updateToken(id: string, fields: TokenFields): Promise<ApiTokenRecord | undefined>;
  /** Gives the token a new secret (the old one stops working); false when there is no such token. */
  rollToken(id: string, value: string): Promise<boolean>;
  deleteToken(id: string): Promise<boolean>;
  touchToken(id: string, when: string): Promise<void>;
  /** True until the first user exists (the platform then bootstraps one). */
  isEmpty(): Promise<boolean>;
}
