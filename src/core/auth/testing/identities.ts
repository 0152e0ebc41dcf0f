import { randomBytes } from "node:crypto";
import { join } from "node:path";
import { openDatabase } from "../../db/sqlite.js";
import { newGlobalKey } from "../credentials.js";
import { identityMigrations, SqliteIdentityStore } from "../store.js";

/**
 * Set-ups the public API has no call for (another user, a user joining an account), written straight into the
 * platform's identity database in `stateDir` while it runs (SQLite in WAL mode takes a second writer). The platform
 * caches credentials until its next identity change through the API, so a membership added here is seen once some
 * token is created or revoked; a new user is seen at once.
 */
function withIdentityStore<T>(stateDir: string, fn: (store: SqliteIdentityStore) => T): T {
  const db = openDatabase(join(stateDir, "db", "core.sqlite"), identityMigrations);
  try {
    return fn(new SqliteIdentityStore(db));
  } finally {
    db.close();
  }
}

export interface TestUser {
  userId: string;
  email: string;
  apiKey: string;
  /** Global key headers (and an empty Authorization, so a test platform's default token is not sent). */
  headers: Record<string, string>;
}

/** Adds a user with a global key, a member of the given accounts. */
export function addUser(stateDir: string, accountIds: readonly string[]): TestUser {
  return withIdentityStore(stateDir, (store) => {
    const email = `user-${randomBytes(4).toString("hex")}@example.com`;
    const apiKey = newGlobalKey();
    const user = store.createUser(email);
    store.setGlobalKey(user.id, apiKey);
    for (const acc of accountIds) store.addMembership(user.id, acc);
    return { userId: user.id, email, apiKey, headers: { "x-auth-email": email, "x-auth-key": apiKey, authorization: "" } };
  });
}

/** Makes a user a member of one more account. */
export function addMembership(stateDir: string, userId: string, accountId: string): void {
  withIdentityStore(stateDir, (store) => store.addMembership(userId, accountId));
}
