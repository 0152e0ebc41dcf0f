import { join } from "node:path";
import { FileContentStore } from "../../core/content/file-store.js";
import { openDatabase } from "../../core/db/sqlite.js";
import { existingStateDir, localAccountId } from "../../core/state-dir.js";
import { KV_LIMITS } from "../limits.js";
import { KV_MIGRATIONS } from "../sqlite-migrations.js";
import { SqliteKvStore } from "../sqlite-store.js";
import type { KvBulkEntry, KvKeyInfo, KvPutOptions } from "../store.js";
import type { KvCliBackend } from "./backend.js";

/**
 * Opens the KV store of a state directory exactly as `edgecli serve` does (<state>/db/kv.sqlite and
 * <state>/content/kv, same migrations), so both see the same data; SQLite WAL keeps the two processes safe.
 */
export function openLocalKvStore(stateDir: string): { store: SqliteKvStore; close(): void } {
  const db = openDatabase(join(stateDir, "db", "kv.sqlite"), KV_MIGRATIONS);
  return { store: new SqliteKvStore(db, new FileContentStore(join(stateDir, "content", "kv"))), close: () => db.close() };
}

export class LocalKvBackend implements KvCliBackend {
  readonly where = "local";
  private readonly opened;
  private readonly store;

  constructor(
    readonly stateDir: string,
    private readonly namespaceId: string,
    private readonly account: () => string,
  ) {
    this.opened = openLocalKvStore(stateDir);
    this.store = this.opened.store;
  }

  static open(persistTo: string | undefined, namespaceId: string, env: NodeJS.ProcessEnv, cwd: string, configuredAccount?: string): LocalKvBackend {
    const dir = existingStateDir(persistTo, env, cwd);
    return new LocalKvBackend(dir, namespaceId, () => localAccountId(dir, env, configuredAccount));
  }

  /** Like wrangler's local mode, any namespace id can be written to; the first write records it. */
  private ensureNamespace(): Promise<void> {
    return this.store.adoptNamespace(this.account(), this.namespaceId);
  }

  async put(key: string, value: Buffer, opts: KvPutOptions): Promise<void> {
    await this.ensureNamespace();
    await this.store.put(this.namespaceId, key, value, opts);
  }

  async get(key: string): Promise<Buffer | null> {
    return (await this.store.get(this.namespaceId, key))?.value ?? null;
  }

  async list(prefix?: string): Promise<KvKeyInfo[]> {
    const out: KvKeyInfo[] = [];
    let cursor: string | undefined;
    do {
      const page = await this.store.list(this.namespaceId, { prefix, cursor });
      out.push(...page.keys);
      cursor = page.cursor;
    } while (cursor);
    return out;
  }

  async delete(key: string): Promise<void> {
    await this.store.delete(this.namespaceId, key);
  }

  async putMany(entries: readonly KvBulkEntry[], progress: (done: number) => void): Promise<void> {
    await this.ensureNamespace();
    for (let i = 0; i < entries.length; i += KV_LIMITS.bulkWriteEntries) {
      await this.store.putMany(this.namespaceId, entries.slice(i, i + KV_LIMITS.bulkWriteEntries));
      progress(Math.min(entries.length, i + KV_LIMITS.bulkWriteEntries));
    }
  }

  async deleteMany(keys: readonly string[], progress: (done: number) => void): Promise<void> {
    await this.store.deleteMany(this.namespaceId, keys);
    progress(keys.length);
  }

  close(): void {
    this.opened.close();
  }
}
