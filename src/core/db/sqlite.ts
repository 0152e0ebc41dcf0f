import Database from "better-sqlite3";
import { existsSync, mkdirSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";

export type Db = Database.Database;

/**
 * One migration is one SQL script. The list is append-only: a migration that shipped is never edited,
 * the next change is a new entry. The file's `user_version` records how many have run.
 */
export type Migration = string | ((db: Db) => void);

export interface OpenOptions {
  readonly?: boolean;
}

let nativeBinding: string | undefined | null = null;

/**
 * Where better-sqlite3's compiled addon is. Naming it directly skips the `bindings` package's search of a dozen
 * candidate paths, a measurable part of a short CLI command's start-up.
 */
export function sqliteAddon(): string | undefined {
  if (nativeBinding === null) {
    const pkg = dirname(createRequire(import.meta.url).resolve("better-sqlite3/package.json"));
    const file = join(pkg, "build", "Release", "better_sqlite3.node");
    nativeBinding = existsSync(file) ? file : undefined;
  }
  return nativeBinding;
}

/** Opens (creating if needed) a SQLite file in WAL mode, tuned for one writer and many readers. */
export function openDatabase(file: string, migrations: readonly Migration[], opts: OpenOptions = {}): Db {
  if (file !== ":memory:") mkdirSync(dirname(file), { recursive: true, mode: 0o700 });
  const db = new Database(file, { readonly: opts.readonly ?? false, nativeBinding: sqliteAddon() });
  // busy_timeout first: another process (edgecli --local next to a running server) may hold the write lock.
  db.pragma("busy_timeout = 5000");
  if (!opts.readonly) {
    db.pragma("journal_mode = WAL");
    db.pragma("synchronous = NORMAL");
  }
  db.pragma("foreign_keys = ON");
  if (!opts.readonly) migrate(db, migrations);
  return db;
}

export function migrate(db: Db, migrations: readonly Migration[]): void {
  const current = db.pragma("user_version", { simple: true }) as number;
  if (current > migrations.length) {
    throw new Error(`database ${db.name} is at schema version ${current}, newer than this program knows (${migrations.length}); upgrade edgecli`);
  }
  if (current === migrations.length) return;
  // BEGIN IMMEDIATE so that two processes starting together do not both run the same migration.
  const run = db.transaction(() => {
    const now = db.pragma("user_version", { simple: true }) as number;
    for (let i = now; i < migrations.length; i++) {
      const m = migrations[i];
      if (typeof m === "string") db.exec(m);
      else m(db);
    }
    db.pragma(`user_version = ${migrations.length}`);
  });
  run.immediate();
}
