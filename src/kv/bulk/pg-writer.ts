import type { Readable } from "node:stream";
import type { Postgres } from "../../core/db/postgres.js";
import { CoreErrors } from "../../core/errors.js";
import { KvErrors } from "../errors.js";
import { KV_LIMITS } from "../limits.js";
import { ENTRY_COLUMNS, ENTRY_UPSERT, lockForWrite, type PgKvStore } from "../pg-store.js";
import type { KvBulkWriter } from "../store.js";
import type { PreparedEntry } from "../validation.js";
import { BulkEntryChecker } from "./entry.js";
import { jsonArrayElements } from "./json-array-stream.js";
import { BulkAdmission } from "./slots.js";

/** Entries are staged in batches of about this many bytes (or entries), each batch one INSERT. */
const BATCH_BYTES = 512 * 1024;
const BATCH_ENTRIES = 500;
/**
 * A bulk write still staged after this long belongs to a node that died mid-write (no body takes a day to send):
 * the sweep deletes what it staged, and gcContent its content.
 */
const STALE_BULK_WRITE = "1 day";

/**
 * Streamed bulk writes on PostgreSQL. The body is parsed as it arrives (jsonArrayElements), each entry checked as
 * it comes (the same rules and refusals as SQLite's bulk writer), values over the inline limit stored in the
 * content store, and the entries staged in kv.bulk_staged a batch at a time in short statements; one last
 * transaction copies them into kv.entries. So a bulk write is all or nothing, memory holds a batch, and no
 * transaction stays open (holding locks and a connection) while a slow client sends. Any node's bulk writes may
 * run at once: each stages under its own id, and the final transactions take row locks in key order.
 */
export class PgBulkWriter implements KvBulkWriter {
  private readonly admission = new BulkAdmission();
  private stopped = false;

  constructor(
    private readonly pg: Postgres,
    private readonly store: PgKvStore,
  ) {}

  async write(namespaceId: string, body: Readable | undefined, declaredBytes?: number): Promise<number> {
    const release = await this.admission.admit(declaredBytes);
    try {
      if (this.stopped) throw shuttingDown();
      return await this.run(namespaceId, body);
    } finally {
      release();
      // Whatever was not read of the body is dropped as it arrives.
      body?.resume();
    }
  }

  private async run(namespaceId: string, body: Readable | undefined): Promise<number> {
    const checker = new BulkEntryChecker();
    let bulkId: string | undefined;
    let batch: PreparedEntry[] = [];
    let batchContent: (string | null)[] = [];
    let batchBytes = 0;
    let staged = 0;
    const flush = async () => {
      if (!batch.length) return;
      bulkId ??= (await this.pg.row<{ id: string }>("INSERT INTO kv.bulk_writes DEFAULT VALUES RETURNING id"))!.id;
      await this.pg.execute(
        `INSERT INTO kv.bulk_staged (bulk_id, ns_id, seq, ${ENTRY_COLUMNS})
         SELECT $1, $2, * FROM unnest($3::int[], $4::bytea[], $5::bigint[], $6::text[], $7::int[], $8::text[], $9::bytea[])`,
        [
          bulkId,
          namespaceId,
          batch.map((_, i) => staged + i),
          batch.map((e) => e.key),
          batch.map((e) => e.expiration),
          batch.map((e) => e.metadata),
          batch.map((e) => e.value.length),
          batchContent,
          batch.map((e, i) => (batchContent[i] ? null : e.value)),
        ],
      );
      staged += batch.length;
      batch = [];
      batchContent = [];
      batchBytes = 0;
    };
    // Content stored for the batch not yet staged is named by nothing: it goes with the rest.
    const abandon = async () => {
      const own = batchContent.filter((id): id is string => id !== null);
      batch = [];
      batchContent = [];
      const id = bulkId;
      bulkId = undefined;
      if (id !== undefined) own.push(...(await this.abandonStaged(id)));
      await this.store.dropContent(own);
    };

    try {
      for await (const element of jsonArrayElements(body && bodyChunks(body), KV_LIMITS.bulkBodyBytes)) {
        const refusedBefore = checker.refused;
        const entry = checker.check(element);
        if (!entry) {
          if (!refusedBefore && checker.refused) await abandon();
          continue;
        }
        batch.push(entry);
        batchContent.push(entry.value.length > KV_LIMITS.inlineValueBytes ? await this.store.putContent(entry.value) : null);
        batchBytes += entry.value.length;
        if (batchBytes >= BATCH_BYTES || batch.length >= BATCH_ENTRIES) await flush();
      }
      const count = checker.finish();
      await flush();
      if (bulkId !== undefined) {
        const id = bulkId;
        const replaced = await this.commit(id, namespaceId, staged).finally(() => this.store.cache?.dropNamespace(namespaceId));
        bulkId = undefined;
        await this.store.dropContent(replaced);
      }
      return count;
    } catch (err) {
      // What cannot be removed now is removed by the sweep (abandonStale) and gcContent.
      await abandon().catch(() => undefined);
      throw err;
    }
  }

  /**
   * One transaction writes every staged entry (the last of each key wins) and forgets the bulk write; returns the
   * content ids the entries replaced, and those of entries a later one of the same key superseded.
   */
  private commit(bulkId: string, namespaceId: string, expected: number): Promise<string[]> {
    return this.pg.withTransaction(async (tx) => {
      // The staged rows are all there, or the sweep took them for a dead node's: never a part of the body.
      const present = await tx.row<{ n: string }>("SELECT count(*) AS n FROM kv.bulk_staged WHERE bulk_id = $1", [bulkId]);
      if (Number(present!.n) !== expected) throw new Error(`KV bulk write ${bulkId}: ${present!.n} of ${expected} staged entries are left`);
      const replaced = await lockForWrite(tx, namespaceId, "SELECT key FROM kv.bulk_staged WHERE bulk_id = $2", [bulkId]);
      const superseded = await tx.rows<{ content_id: string }>(
        `SELECT content_id FROM kv.bulk_staged s WHERE bulk_id = $1 AND content_id IS NOT NULL
           AND EXISTS (SELECT 1 FROM kv.bulk_staged l WHERE l.bulk_id = s.bulk_id AND l.key = s.key AND l.seq > s.seq)`,
        [bulkId],
      );
      await tx.execute(
        `INSERT INTO kv.entries (ns_id, ${ENTRY_COLUMNS})
         SELECT $1, ${ENTRY_COLUMNS} FROM (SELECT DISTINCT ON (key) * FROM kv.bulk_staged WHERE bulk_id = $2 ORDER BY key, seq DESC) s
         ORDER BY key ${ENTRY_UPSERT}`,
        [namespaceId, bulkId],
      );
      await tx.execute("DELETE FROM kv.bulk_writes WHERE id = $1", [bulkId]);
      // Every node's read cache forgets the namespace when this commits.
      await this.store.namespaceChanged(namespaceId, tx);
      return [...replaced, ...superseded.map((r) => r.content_id)];
    });
  }

  /** Deletes what bulk write `bulkId` staged; returns the content ids it named (now named by nothing). */
  private abandonStaged(bulkId: string): Promise<string[]> {
    return this.pg.withTransaction(async (tx) => {
      const rows = await tx.rows<{ content_id: string | null }>("DELETE FROM kv.bulk_staged WHERE bulk_id = $1 RETURNING content_id", [bulkId]);
      await tx.execute("DELETE FROM kv.bulk_writes WHERE id = $1", [bulkId]);
      return rows.flatMap((r) => (r.content_id ? [r.content_id] : []));
    });
  }

  /** Deletes what bulk writes of dead nodes left staged (see STALE_BULK_WRITE); returns how many there were. */
  async abandonStale(): Promise<number> {
    const stale = await this.pg.rows<{ id: string }>(`SELECT id FROM kv.bulk_writes WHERE started_at < now() - interval '${STALE_BULK_WRITE}'`);
    for (const { id } of stale) await this.store.dropContent(await this.abandonStaged(id));
    return stale.length;
  }

  /** Refuses the bulk writes still waiting for a slot (a stopping server has stopped taking requests). */
  async stop(): Promise<void> {
    this.stopped = true;
    this.admission.close(shuttingDown());
  }
}

const shuttingDown = () => CoreErrors.shuttingDown("bulk write");

/** The request body's chunks; a body cut short is the client's doing: a 400 it will likely never read, not a 500. */
async function* bodyChunks(body: Readable): AsyncGenerator<Uint8Array> {
  try {
    // Not destroyed if the parser stops early: the request still gets its answer.
    for await (const chunk of body.iterator({ destroyOnReturn: false })) yield chunk as Buffer;
  } catch (err) {
    throw KvErrors.bodyUnreadable((err as Error).message);
  }
}
