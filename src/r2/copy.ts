import type { AreaCopier } from "../core/state-copy/area.js";
import { R2_PG_MIGRATIONS } from "./pg-migrations.js";
import { R2BodyPolicy } from "./objects/body-policy.js";
import { R2_SMALL_BODIES, r2Migrations } from "./sqlite-migrations.js";

/** `[[contentId, size], ...]`: the bodies of an object, in order. */
type Segments = [string, number][];

/**
 * R2 for `edgecli state copy`: buckets (each backend numbers them itself; objects, uploads and CORS rules follow
 * the number), their CORS rules, objects with every body streamed into the target's content store (a body up to
 * R2BodyPolicy.rowBytes going into PostgreSQL goes into the object's row, as PgR2Store keeps it), and multipart
 * uploads under way with the parts uploaded so far (a client can still complete them on the other side), event
 * notification rules, and the notifications recorded and not yet moved to their queues (the target's relay moves them).
 */
export const r2Copier: AreaCopier = {
  name: "r2",
  sqlite: { database: "r2", migrations: r2Migrations, smallBodies: R2_SMALL_BODIES, smallBodyBytes: R2BodyPolicy.rowBytes },
  postgres: { schema: "r2", migrations: R2_PG_MIGRATIONS },
  content: "r2",
  tables: [
    { table: "buckets", columns: ["account_id", "name", "created_at", "location", "storage_class"], key: ["account_id", "name"], generatedId: "id" },
    { table: "bucket_cors", columns: ["bucket_id", "rules"], key: ["bucket_id"], references: { bucket_id: "buckets" } },
    {
      table: "objects",
      columns: ["bucket_id", "key", "version", "size", "etag", "uploaded", "http", "custom", "checksums", "storage_class", "segments"],
      // PostgreSQL keeps a small object's bytes in its row (pg-store.ts); SQLite in its small-body table.
      onlyOn: { postgresql: ["body"] },
      key: ["bucket_id", "key"],
      references: { bucket_id: "buckets" },
      async copyContent(row, content) {
        const segments = JSON.parse(row.segments as string) as Segments;
        const inRow = row.body as Buffer | null | undefined;
        if (inRow) return { ...row, segments: JSON.stringify([[await content.put(inRow), inRow.length]]), body: null };
        if (content.target === "postgresql" && segments.length === 1 && segments[0]![1] <= R2BodyPolicy.rowBytes) {
          return { ...row, segments: "[]", body: await content.read(segments[0]![0]) };
        }
        const copied: Segments = [];
        for (const [id, size] of segments) copied.push([await content.copy(id), size]);
        return { ...row, segments: JSON.stringify(copied) };
      },
    },
    {
      table: "uploads",
      columns: ["upload_id", "bucket_id", "key", "http", "custom", "storage_class", "created"],
      key: ["upload_id"],
      references: { bucket_id: "buckets" },
    },
    {
      table: "parts",
      columns: ["upload_id", "part_number", "content_id", "size", "md5", "uploaded"],
      key: ["upload_id", "part_number"],
      copyContent: async (row, content) => ({ ...row, content_id: await content.copy(row.content_id as string) }),
    },
    {
      table: "notification_rules",
      columns: ["rule_id", "bucket_id", "queue_id", "actions", "prefix", "suffix", "description", "created_at"],
      key: ["rule_id"],
      references: { bucket_id: "buckets" },
    },
    // Not leased on the target: leased_until takes its default (0).
    { table: "notification_outbox", columns: ["account_id", "queue_id", "message_id", "body"], key: ["message_id"], generatedId: "id" },
  ],
};
