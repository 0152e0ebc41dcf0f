import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, test, type TestContext } from "node:test";
import { openDatabase, type Db, type Migration } from "../db/sqlite.js";

/**
 * Store contracts: a store's behaviour is written once, as cases against its interface, and run against every
 * backend. The convention, per area:
 *
 *   // <area>/store.contract.ts (test-only: never published)
 *   export const describeKvStore = storeContract<KvStore>("KvStore", (it) => {
 *     it("a put is read back", async (store) => { ... });
 *   });
 *
 *   // <area>/sqlite-store.test.ts
 *   describeKvStore("SQLite", sqliteStoreFactory(KV_MIGRATIONS, (db, dir) => new SqliteKvStore(db, new FileContentStore(dir))));
 *
 *   // <area>/pg-store.test.ts (PostgreSQL, and S3 for bodies: core/testing/pg-store.ts)
 *   describeKvStore("PostgreSQL", async (t) => {
 *     const pg = await testPostgres(t, "kv", KV_PG_MIGRATIONS);
 *     const content = await testContentStore(t, "kv");
 *     return pg && content && { store: new PgKvStore(pg, content), close() {} };
 *   });
 *
 * Each case gets a fresh, empty store and it is closed after the case.
 */

/**
 * Opens a fresh, empty store of one backend for the case `t`; `close` releases it and removes what it stored.
 * Undefined when the backend is not available here and the case was skipped (`t.skip`) for it.
 */
export type StoreFactory<S> = (t: TestContext) => Promise<{ store: S; close(): void | Promise<void> } | undefined>;

/** Declares one case of a contract: `body` gets a fresh store. */
export type ContractCase<S> = (title: string, body: (store: S) => Promise<void>) => void;

export interface ContractOptions {
  /** Skips the suite with this reason (a backend that is not available here). */
  skip?: string | false;
}

/** A contract: call the result with a backend's name and its store factory to run every case against it. */
export function storeContract<S>(name: string, cases: (it: ContractCase<S>) => void) {
  return (backend: string, open: StoreFactory<S>, opts: ContractOptions = {}): void => {
    describe(`${name} contract: ${backend}`, { skip: opts.skip }, () => {
      cases((title, body) =>
        test(title, async (t) => {
          const opened = await open(t);
          if (!opened) return;
          const { store, close } = opened;
          try {
            await body(store);
          } finally {
            await close();
          }
        }),
      );
    });
  };
}

/**
 * A factory for SQLite stores: a new database file (with `migrations`) in a temporary directory per case. It needs
 * no test context and always opens, so tests may also call it directly.
 */
export function sqliteStoreFactory<S>(migrations: readonly Migration[], make: (db: Db, dir: string) => S): () => Promise<{ store: S; close(): void }> {
  return async () => {
    const dir = mkdtempSync(join(tmpdir(), "edge-store-contract-"));
    const db = openDatabase(join(dir, "store.sqlite"), migrations);
    return {
      store: make(db, dir),
      close: () => {
        db.close();
        rmSync(dir, { recursive: true, force: true });
      },
    };
  };
}
