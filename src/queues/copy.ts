import type { AreaCopier } from "../core/state-copy/area.js";
import { QUEUES_PG_MIGRATIONS } from "./pg-migrations.js";
import { QUEUES_AREA } from "./pg-store.js";
import { QUEUES_MIGRATIONS } from "./sqlite-migrations.js";

/**
 * Queues for `edgecli state copy`: queues (with their backlog counters and settings), their consumers, and the messages waiting in them (bodies are rows), with
 * their attempts and visibility. A message leased when the platform stopped keeps its lease and comes back when it
 * lapses, as after a restart. Each backend numbers messages itself; they are read per queue in the order they were
 * sent, so the target delivers them in that order too.
 */
export const queuesCopier: AreaCopier = {
  name: "queues",
  sqlite: { database: "queues", migrations: QUEUES_MIGRATIONS },
  postgres: { schema: QUEUES_AREA, migrations: QUEUES_PG_MIGRATIONS },
  tables: [
    // The backlog counters are carried with the queue: they count the messages copied after it (the source's are
    // kept in the transaction of each write, and the platform is stopped while it is copied).
    {
      table: "queues",
      columns: [
        "id",
        "account_id",
        "name",
        "created_on",
        "modified_on",
        "purged_at",
        "backlog_messages",
        "backlog_bytes",
        "delivery_delay",
        "delivery_paused",
        "message_retention_period",
      ],
      key: ["id"],
    },
    {
      table: "consumers",
      columns: ["id", "queue_id", "type", "script_name", "settings", "dead_letter_queue", "created_on"],
      key: ["id"],
    },
    {
      table: "messages",
      columns: ["id", "queue_id", "body", "content_type", "attempts", "sent_at", "visible_at", "lease_id"],
      key: ["queue_id", "sent_at", "id"],
      generatedId: "seq",
    },
  ],
};
