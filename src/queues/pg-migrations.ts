import type { PgMigration } from "../core/db/pg-migrations.js";

/** Queues' tables on PostgreSQL (schema `queues`), append-only as the SQLite ones. Times are ms since the epoch. */
export const QUEUES_PG_MIGRATIONS: readonly PgMigration[] = [
  `CREATE TABLE queues (
     id TEXT COLLATE "C" PRIMARY KEY,
     account_id TEXT NOT NULL,
     name TEXT COLLATE "C" NOT NULL,
     created_on BIGINT NOT NULL,
     modified_on BIGINT NOT NULL,
     UNIQUE (account_id, name)
   );
   CREATE TABLE consumers (
     id TEXT COLLATE "C" PRIMARY KEY,
     queue_id TEXT COLLATE "C" NOT NULL UNIQUE REFERENCES queues(id) ON DELETE CASCADE,
     type TEXT NOT NULL,
     script_name TEXT,
     settings TEXT NOT NULL,
     dead_letter_queue TEXT,
     created_on BIGINT NOT NULL
   );
   CREATE TABLE messages (
     seq BIGSERIAL PRIMARY KEY,
     id TEXT COLLATE "C" NOT NULL UNIQUE,
     queue_id TEXT COLLATE "C" NOT NULL REFERENCES queues(id) ON DELETE CASCADE,
     body BYTEA NOT NULL,
     content_type TEXT NOT NULL,
     attempts INTEGER NOT NULL DEFAULT 0,
     sent_at BIGINT NOT NULL,
     visible_at BIGINT NOT NULL,
     lease_id TEXT
   );
   CREATE INDEX messages_ready ON messages (queue_id, visible_at, seq);`,
  // 2: when the last purge started (the purge status API); null until the queue is purged.
  `ALTER TABLE queues ADD COLUMN purged_at BIGINT;`,
  // 3: each queue's backlog as counters (the cap is checked against them, the messages are not read), kept in the
  // transaction of every write of messages; counted once here for the queues that already have messages.
  `ALTER TABLE queues ADD COLUMN backlog_messages BIGINT NOT NULL DEFAULT 0;
   ALTER TABLE queues ADD COLUMN backlog_bytes BIGINT NOT NULL DEFAULT 0;
   UPDATE queues SET
     backlog_messages = (SELECT count(*) FROM messages m WHERE m.queue_id = queues.id),
     backlog_bytes = (SELECT coalesce(sum(length(m.body)), 0) FROM messages m WHERE m.queue_id = queues.id);`,
  // 4: the queue-wide settings (seconds): delivery_delay is the delay of a message sent without one,
  // message_retention_period how long a message may wait before the sweep removes it (never delivered after),
  // delivery_paused holds back every delivery and pull. sent_at is indexed per queue for the sweep.
  `ALTER TABLE queues ADD COLUMN delivery_delay BIGINT NOT NULL DEFAULT 0;
   ALTER TABLE queues ADD COLUMN delivery_paused BOOLEAN NOT NULL DEFAULT false;
   ALTER TABLE queues ADD COLUMN message_retention_period BIGINT NOT NULL DEFAULT 345600;
   CREATE INDEX messages_sent ON messages (queue_id, sent_at);`,
];
