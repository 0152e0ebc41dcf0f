import type { AreaCopier } from "../core/state-copy/area.js";
import { KV_LIMITS } from "./limits.js";
import { KV_PG_MIGRATIONS } from "./pg-migrations.js";
import { KV_MIGRATIONS } from "./sqlite-migrations.js";

/**
 * KV for `edgecli state copy`: namespaces (ids kept) and their entries, expired ones too (the target's sweep
 * removes them). A value in the content store is streamed into the target's; a value SQLite keeps in `blobs` (a
 * bulk write's) is read with its entry. On PostgreSQL a value over the inline limit goes to the content store, as
 * PgKvStore writes it. Bulk writes under way are not copied: they never committed.
 */
export const kvCopier: AreaCopier = {
  name: "kv",
  sqlite: { database: "kv", migrations: KV_MIGRATIONS },
  postgres: { schema: "kv", migrations: KV_PG_MIGRATIONS },
  content: "kv",
  tables: [
    { table: "namespaces", columns: ["id", "account_id", "title", "created_at"], key: ["id"] },
    {
      table: "entries",
      columns: ["ns_id", "key", "expiration", "metadata", "size", "content_id", "value"],
      key: ["ns_id", "key"],
      readAs: { sqlite: { value: "coalesce(value, (SELECT b.value FROM blobs b WHERE b.id = entries.blob_id))" } },
      large: ["value"],
      async copyContent(row, content) {
        if (row.content_id) return { ...row, content_id: await content.copy(row.content_id as string) };
        const value = row.value as Buffer | null;
        if (content.target === "postgresql" && value && value.length > KV_LIMITS.inlineValueBytes) {
          return { ...row, content_id: await content.put(value), value: null };
        }
        return row;
      },
    },
  ],
};
