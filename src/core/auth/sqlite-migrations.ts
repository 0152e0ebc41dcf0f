import type { Db, Migration } from "../db/sqlite.js";
import type { Grant } from "./store.js";

/** The identity database's schema (`<state>/db/core.sqlite`), one append-only step per version. */
export const IDENTITY_MIGRATIONS: Migration[] = [
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
