import { randomBytes } from "node:crypto";
import { join } from "node:path";
import { openDatabase } from "../../db/sqlite.js";
import { newGlobalKey } from "../credentials.js";
import { IDENTITY_MIGRATIONS } from "../sqlite-migrations.js";
import { SqliteIdentityStore } from "../sqlite-store.js";

/**
 * Set-ups the public API has no call for (another user, a user joining an account), written straight into the
 * platform's identity database in `stateDir` while it runs (SQLite in WAL mode takes a second writer). The platform
 * caches credentials until its next identity change through the API, so a membership added here is seen once some
 * token is created or revoked; a new user is seen at once.
 */
async function withIdentityStore<T>(stateDir: string, fn: (store: SqliteIdentityStore) => Promise<T>): Promise<T> {
  const db = openDatabase(join(stateDir, "db", "core.sqlite"), IDENTITY_MIGRATIONS);
  try {
    return await fn(new SqliteIdentityStore(db));
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
export function addUser(stateDir: string, accountIds: readonly string[]): Promise<TestUser> {
  return withIdentityStore(stateDir, async (store) => {
    const email = `user-${randomBytes(4).toString("hex")}@example.com`;
    const apiKey = newGlobalKey();
    const user = await store.createUser(email);
    await store.setGlobalKey(user.id, apiKey);
    for (const acc of accountIds) await store.addMembership(user.id, acc);
    return { userId: user.id, email, apiKey, headers: { "x-auth-email": email, "x-auth-key": apiKey, authorization: "" } };
  });
}

/** Makes a user a member of one more account. */
export function addMembership(stateDir: string, userId: string, accountId: string): Promise<void> {
  return withIdentityStore(stateDir, (store) => store.addMembership(userId, accountId));
}
