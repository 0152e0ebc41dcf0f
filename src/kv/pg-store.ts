import { randomBytes } from "node:crypto";
import type { Bus } from "../core/cluster/bus.js";
import type { ContentStore } from "../core/content/store.js";
import { GroupCommit, type CommitOutcomes } from "../core/db/group-commit.js";
import { namedStatement, type Postgres, type Transaction } from "../core/db/postgres.js";
import { KvErrors } from "./errors.js";
import { listRange, listResult, type ListRow } from "./listing.js";
import { KV_LIMITS } from "./limits.js";
import { KvReadCache } from "./read-cache.js";
import type { KvBulkEntry, KvEntry, KvListOptions, KvListResult, KvNamespace, KvPutOptions, KvStore, NamespaceListOptions, NamespacePage } from "./store.js";
import { checkKey, checkKeysToDelete, checkTitle, forItem, prepareEntries, prepareEntry, type PreparedEntry } from "./validation.js";

const nowSeconds = () => Math.floor(Date.now() / 1000);
const namespace = (row: { id: string; title: string }): KvNamespace => ({ id: row.id, title: row.title, supports_url_encoding: true });
/** BIGINT columns come back as strings from `pg`. */
const seconds = (v: string | number | null): number | null => (v === null ? null : Number(v));
const isCode = (err: unknown, code: string) => (err as { code?: unknown }).code === code;

/** Expired rows are purged this many at a time, each batch its own statement. */
const PURGE_BATCH = 1000;

/** The columns of an entry as written, in the order ENTRY_COLUMNS names them. */
export const ENTRY_COLUMNS = "key, expiration, metadata, size, content_id, value";
/** What an upsert into kv.entries sets when the key is there already. */
export const ENTRY_UPSERT = `ON CONFLICT (ns_id, key) DO UPDATE SET expiration = excluded.expiration, metadata = excluded.metadata,
  size = excluded.size, content_id = excluded.content_id, value = excluded.value`;

/**
 * Inside a write transaction: makes sure namespace `namespaceId` exists until the commit (404 when it is gone; a
 * namespace delete waits for this transaction) and locks the rows of the keys `keysSql` selects ($1 is the
 * namespace), in key order so that two writers never deadlock. Returns the content ids of those rows: the write
 * replaces them, they are deleted after the commit. A row another node inserts between this and the upsert is
 * overwritten without its content id being seen; that content is left to gcContent.
 */
export async function lockForWrite(tx: Transaction, namespaceId: string, keysSql: string, params: readonly unknown[]): Promise<string[]> {
  if (!(await tx.row("SELECT 1 FROM kv.namespaces WHERE id = $1 FOR KEY SHARE", [namespaceId]))) throw KvErrors.namespaceNotFound();
  const rows = await tx.rows<{ content_id: string | null }>(
    `SELECT content_id FROM kv.entries WHERE ns_id = $1 AND key IN (${keysSql}) ORDER BY key FOR UPDATE`,
    [namespaceId, ...params],
  );
  return rows.flatMap((r) => (r.content_id ? [r.content_id] : []));
}

/** The bus area of KV changes; `what` is `key:<namespace id>:<key as hex>` or `ns:<namespace id>`. */
export const KV_BUS_AREA = "kv";

const GET_NAMESPACE = namedStatement("kv.get_namespace", "SELECT id, title, account_id FROM kv.namespaces WHERE id = $1");
const READ_ENTRIES = namedStatement(
  "kv.read_entries",
  `SELECT key, expiration, metadata, content_id, value FROM kv.entries
   WHERE ns_id = $1 AND key = ANY($2::bytea[]) AND (expiration IS NULL OR expiration > $3)`,
);
const WRITE_ENTRIES = namedStatement(
  "kv.write_entries",
  "SELECT kv.write_entries($1, $2::bytea[], $3::bigint[], $4::text[], $5::int[], $6::text[], $7::bytea[], $8, $9) AS replaced",
);
const WRITE_BATCH = namedStatement(
  "kv.write_batch",
  "SELECT missing, replaced FROM kv.write_batch($1::text[], $2::bytea[], $3::bigint[], $4::text[], $5::bytea[], $6, $7::text[])",
);
const DELETE_ENTRIES = namedStatement("kv.delete_entries", "SELECT kv.delete_entries($1, $2::bytea[], $3, $4) AS removed");

/**
 * What one group commit of single writes carries at most: 256 writes, 1 MiB of keys, values and metadata (so at most
 * 16 of the largest inline values).
 */
export const KV_GROUP_COMMIT_LIMITS = { maxItems: 256, maxBytes: 1024 * 1024 };

/** A single small-value write waiting for its group commit. */
interface SmallWrite {
  namespaceId: string;
  entry: PreparedEntry;
  /** Its bus notice's `what`. */
  what: string;
  /** After its commit: the deletion of the content the commit's rows replaced (awaited by the write, not the queue). */
  contentDropped?: Promise<void>;
}

export interface PgKvStoreOptions {
  /**
   * Change notices between nodes. With a bus, the store keeps a per-node read cache (read-cache.ts) that every
   * write, delete and namespace change through any node invalidates; without one it caches nothing.
   */
  bus?: Bus;
  /** The cache to keep (its limits); the default one when a bus is given. */
  cache?: KvReadCache;
  /** What a group commit of single writes carries at most (KV_GROUP_COMMIT_LIMITS by default). */
  groupCommit?: { maxItems: number; maxBytes: number };
}

/** A KV bus notice's `what`: one key of a namespace, or the whole namespace; undefined when unreadable. */
export function parseChange(what: string): { namespaceId: string; key?: string } | undefined {
  if (what.startsWith("ns:") && what.length > 3) return { namespaceId: what.slice(3) };
  // The key is hex (no colon); a namespace id may hold one.
  const last = what.lastIndexOf(":");
  if (!what.startsWith("key:") || last <= 4) return undefined;
  return { namespaceId: what.slice(4, last), key: Buffer.from(what.slice(last + 1), "hex").toString("utf8") };
}

interface EntryRow {
  expiration: string | null;
  metadata: string | null;
  content_id: string | null;
  value: Buffer | null;
}

/**
 * KvStore on PostgreSQL (schema `kv`, KV_PG_MIGRATIONS), shared by every node. Values over
 * KV_LIMITS.inlineValueBytes live in the content store (the bucket), written before the row that names them commits;
 * content is deleted only after no committed row names it. With a bus, each node keeps what it read in a KvReadCache:
 * a write through this node is read back at once here, and by other nodes when its notice arrives (eventual
 * consistency, at most the cache's max age, as the hosted KV promises). A write or delete is one round trip (a
 * database function that also sends the notice). Single writes of small values are group-committed: those that
 * arrive while one commit is in flight go together in the next (`smallWrites`), one statement, one transaction and
 * one WAL flush for all of them, each answered once that commit is durable.
 */
export class PgKvStore implements KvStore {
  private readonly bus: Bus | undefined;
  readonly cache: KvReadCache | undefined;
  /** The group commit of single small-value writes (its stats say how well they combine). */
  readonly smallWrites: GroupCommit<SmallWrite>;

  constructor(
    private readonly pg: Postgres,
    private readonly content: ContentStore,
    opts: PgKvStoreOptions = {},
  ) {
    this.bus = opts.bus;
    this.cache = opts.cache ?? (opts.bus ? new KvReadCache() : undefined);
    this.smallWrites = new GroupCommit((batch) => this.commitSmallWrites(batch), opts.groupCommit ?? KV_GROUP_COMMIT_LIMITS);
    const cache = this.cache;
    if (!cache) return;
    opts.bus?.subscribe(KV_BUS_AREA, (event) => {
      if (event.type === "resync") return cache.clear();
      // This node's own changes were dropped when they were made.
      if (event.origin === opts.bus!.nodeId) return;
      const change = parseChange(event.what);
      if (change?.key !== undefined) cache.dropKeys(change.namespaceId, [change.key]);
      else if (change) cache.dropNamespace(change.namespaceId);
      else cache.clear();
    });
  }

  /** The notice of a change (`[channel, payload]` for the database function), or nulls without a PostgreSQL bus. */
  private sqlNotice(what: string): [string | null, string | null] {
    const notice = this.bus?.sqlNotice?.(KV_BUS_AREA, what);
    return notice ? [notice.channel, notice.payload] : [null, null];
  }

  /** After a change committed: a bus that is not PostgreSQL's hears of it now (the database function told the others). */
  private async announced(what: string): Promise<void> {
    if (this.bus && !this.bus.sqlNotice) await this.bus.publish(KV_BUS_AREA, what);
  }

  /**
   * Drops what the cache knows of a namespace and tells the other nodes, inside `tx` when given (a bulk write's
   * commit, a namespace delete) or after the change committed.
   */
  async namespaceChanged(namespaceId: string, tx?: Transaction): Promise<void> {
    this.cache?.dropNamespace(namespaceId);
    const publishing = this.bus?.publish(KV_BUS_AREA, `ns:${namespaceId}`, tx);
    // Inside a transaction a failed notice fails the change. After a commit, the change stands: a notice that cannot
    // be sent means PostgreSQL is unreachable, and every node that lost its bus connection drops its cache on return.
    await (tx ? publishing : publishing?.catch(() => undefined));
  }

  // ---- namespaces ----

  async createNamespace(accountId: string, title: string): Promise<KvNamespace> {
    checkTitle(title);
    const id = randomBytes(16).toString("hex");
    try {
      await this.pg.execute("INSERT INTO kv.namespaces (id, account_id, title, created_at) VALUES ($1, $2, $3, $4)", [id, accountId, title, Date.now()]);
    } catch (e) {
      if (isCode(e, "23505")) throw KvErrors.titleExists(title);
      throw e;
    }
    return namespace({ id, title });
  }

  async getNamespace(accountId: string, namespaceId: string): Promise<KvNamespace | undefined> {
    const known = this.cache?.namespace(namespaceId);
    if (known) return known.accountId === accountId ? namespace({ id: namespaceId, title: known.title }) : undefined;
    const ticket = this.cache?.ticket();
    const row = await this.pg.row<{ id: string; title: string; account_id: string }>(GET_NAMESPACE, [namespaceId]);
    if (row && ticket !== undefined) this.cache!.fillNamespace(ticket, namespaceId, { accountId: row.account_id, title: row.title });
    return row && row.account_id === accountId ? namespace(row) : undefined;
  }

  async listNamespaces(accountId: string, opts: NamespaceListOptions = {}): Promise<NamespacePage> {
    // Column and direction come from fixed choices, never from raw input.
    const col = opts.order === "title" ? "title" : "id";
    const dir = opts.direction === "desc" ? "DESC" : "ASC";
    const rows = await this.pg.rows<{ id: string; title: string; total: string }>(
      `SELECT id, title, count(*) OVER () AS total FROM kv.namespaces WHERE account_id = $1 ORDER BY ${col} ${dir}, id ${dir} LIMIT $2 OFFSET $3`,
      [accountId, opts.limit ?? null, opts.offset ?? 0],
    );
    // A page past the end has no row to carry the total.
    const total = rows.length
      ? Number(rows[0]!.total)
      : Number((await this.pg.row<{ n: string }>("SELECT count(*) AS n FROM kv.namespaces WHERE account_id = $1", [accountId]))!.n);
    return { namespaces: rows.map(namespace), total };
  }

  async renameNamespace(accountId: string, namespaceId: string, title: string): Promise<KvNamespace> {
    checkTitle(title);
    let changed: number;
    try {
      changed = await this.pg.execute("UPDATE kv.namespaces SET title = $1 WHERE account_id = $2 AND id = $3", [title, accountId, namespaceId]);
    } catch (e) {
      if (isCode(e, "23505")) throw KvErrors.titleExists(title);
      throw e;
    }
    if (!changed) throw KvErrors.namespaceNotFound();
    await this.namespaceChanged(namespaceId);
    return namespace({ id: namespaceId, title });
  }

  async deleteNamespace(accountId: string, namespaceId: string): Promise<void> {
    const contentIds = await this.pg.withTransaction(async (tx) => {
      // Locked first: writes into the namespace (which hold it FOR KEY SHARE) finish before, none start after.
      if (!(await tx.row("SELECT 1 FROM kv.namespaces WHERE account_id = $1 AND id = $2 FOR UPDATE", [accountId, namespaceId]))) {
        throw KvErrors.namespaceNotFound();
      }
      const rows = await tx.rows<{ content_id: string }>("DELETE FROM kv.entries WHERE ns_id = $1 AND content_id IS NOT NULL RETURNING content_id", [
        namespaceId,
      ]);
      await tx.execute("DELETE FROM kv.namespaces WHERE id = $1", [namespaceId]);
      await this.namespaceChanged(namespaceId, tx);
      return rows.map((r) => r.content_id);
    });
    this.cache?.dropNamespace(namespaceId);
    await this.dropContent(contentIds);
  }

  // ---- entries ----

  async get(namespaceId: string, key: string): Promise<KvEntry | null> {
    checkKey(key);
    return (await this.readEntries(namespaceId, [key])).get(key) ?? null;
  }

  async getMany(namespaceId: string, keys: readonly string[]): Promise<Map<string, KvEntry | null>> {
    keys.forEach((k, i) => forItem(`keys[${i}]`, () => checkKey(k)));
    return this.readEntries(namespaceId, keys);
  }

  /**
   * Every key once, in order, with its entry or null: what the cache holds, then one query for the other rows, then
   * the content of big values.
   */
  private async readEntries(namespaceId: string, keys: readonly string[]): Promise<Map<string, KvEntry | null>> {
    const unique = [...new Set(keys)];
    const out = new Map<string, KvEntry | null>(unique.map((k) => [k, null]));
    const cache = this.cache;
    const missing: string[] = [];
    for (const k of unique) {
      const known = cache?.get(namespaceId, k);
      if (known === undefined) missing.push(k);
      else out.set(k, known);
    }
    if (!missing.length) return out;
    const ticket = cache?.ticket();
    // A concurrent overwrite may delete a value's content between reading its row and the content: read again.
    for (let attempt = 0, pending = missing; pending.length; attempt++) {
      const rows = await this.pg.rows<EntryRow & { key: Buffer }>(READ_ENTRIES, [namespaceId, pending.map((k) => Buffer.from(k, "utf8")), nowSeconds()]);
      const retry: string[] = [];
      for (const row of rows) {
        const key = row.key.toString("utf8");
        const entry = { metadata: row.metadata === null ? null : JSON.parse(row.metadata), expiration: seconds(row.expiration) };
        try {
          const value = row.content_id === null ? (row.value ?? Buffer.alloc(0)) : await this.content.readAll(row.content_id);
          out.set(key, { value, ...entry });
        } catch (e) {
          if ((e as NodeJS.ErrnoException).code !== "ENOENT" || attempt >= 2) throw e;
          retry.push(key);
        }
      }
      pending = retry;
    }
    if (cache && ticket !== undefined) for (const k of missing) cache.fill(ticket, namespaceId, k, out.get(k)!);
    return out;
  }

  async put(namespaceId: string, key: string, value: Buffer, opts: KvPutOptions = {}): Promise<void> {
    const entry = prepareEntry(key, value, opts);
    if (entry.value.length > KV_LIMITS.inlineValueBytes) return this.write(namespaceId, [entry]);
    const what = this.changeOf(namespaceId, [entry.key]);
    const bytes = entry.key.length + entry.value.length + (entry.metadata?.length ?? 0);
    const write: SmallWrite = { namespaceId, entry, what };
    await this.changing(namespaceId, [entry], () => this.smallWrites.submit(write, bytes));
    await write.contentDropped;
    await this.announced(what);
  }

  /**
   * One group commit (kv.write_batch): every (namespace, key) of the batch once, the last write of it winning as
   * separate commits in arrival order would leave it, sorted so that concurrent commits lock rows in one order. A
   * write into a namespace that is gone fails alone (404); the others are committed.
   */
  private async commitSmallWrites(batch: readonly SmallWrite[]): Promise<CommitOutcomes> {
    const last = new Map<string, SmallWrite>();
    // Hex has no colon: the map key is unambiguous whatever the namespace id holds.
    for (const w of batch) last.set(`${w.entry.key.toString("hex")}:${w.namespaceId}`, w);
    const rows = [...last.values()].sort((a, b) =>
      a.namespaceId === b.namespaceId ? Buffer.compare(a.entry.key, b.entry.key) : a.namespaceId < b.namespaceId ? -1 : 1,
    );
    const notices = rows.map((w) => this.sqlNotice(w.what));
    const result = await this.pg.row<{ missing: string[]; replaced: string[] }>(WRITE_BATCH, [
      rows.map((w) => w.namespaceId),
      rows.map((w) => w.entry.key),
      rows.map((w) => w.entry.expiration),
      rows.map((w) => w.entry.metadata),
      rows.map((w) => w.entry.value),
      notices[0]![0],
      notices.map((n) => n[1]),
    ]);
    // Content deletions (a big value overwritten by a small one) may wait for the object store: the writes of this
    // commit wait for them, the next commit does not.
    if (result!.replaced.length) {
      const dropped = this.dropContent(result!.replaced);
      for (const w of batch) w.contentDropped = dropped;
    }
    const missing = new Set(result!.missing);
    return batch.map((w) => (missing.has(w.namespaceId) ? KvErrors.namespaceNotFound() : undefined));
  }

  async putMany(namespaceId: string, entries: readonly KvBulkEntry[]): Promise<void> {
    const prepared = prepareEntries(entries);
    // The last write of a key wins, as when the entries are written one after another.
    const last = new Map<string, PreparedEntry>();
    for (const e of prepared) last.set(e.key.toString("hex"), e);
    await this.write(namespaceId, [...last.values()]);
  }

  /**
   * Big values go to the content store first, then one statement (kv.write_entries) commits every row (each key
   * once) and announces the change.
   */
  private async write(namespaceId: string, entries: readonly PreparedEntry[]): Promise<void> {
    // A big value is not stored for a namespace known not to exist (the function checks again, under lock).
    if (entries.some((e) => e.value.length > KV_LIMITS.inlineValueBytes) && !(await this.namespaceExists(namespaceId))) throw KvErrors.namespaceNotFound();
    const sorted = [...entries].sort((a, b) => Buffer.compare(a.key, b.key));
    const contentIds: (string | null)[] = [];
    const what = this.changeOf(
      namespaceId,
      sorted.map((e) => e.key),
    );
    let replaced: string[] | null;
    try {
      for (const e of sorted) contentIds.push(e.value.length > KV_LIMITS.inlineValueBytes ? await this.putContent(e.value) : null);
      const row = await this.changing(namespaceId, sorted, () =>
        this.pg.row<{ replaced: string[] | null }>(WRITE_ENTRIES, [
          namespaceId,
          sorted.map((e) => e.key),
          sorted.map((e) => e.expiration),
          sorted.map((e) => e.metadata),
          sorted.map((e) => e.value.length),
          contentIds,
          sorted.map((e, i) => (contentIds[i] ? null : e.value)),
          ...this.sqlNotice(what),
        ]),
      );
      replaced = row!.replaced;
      if (replaced === null) throw KvErrors.namespaceNotFound();
    } catch (err) {
      await this.dropContent(contentIds.filter((id): id is string => id !== null));
      throw err;
    }
    await this.announced(what);
    await this.dropContent(replaced);
  }

  private async namespaceExists(namespaceId: string): Promise<boolean> {
    return this.cache?.namespace(namespaceId) !== undefined || (await this.pg.row(GET_NAMESPACE, [namespaceId])) !== undefined;
  }

  /** What a change of `keys` announces: the key itself when there is one, else the whole namespace. */
  private changeOf(namespaceId: string, keys: readonly Buffer[]): string {
    return keys.length === 1 && keys[0]!.length <= KV_LIMITS.keyBytes ? `key:${namespaceId}:${keys[0]!.toString("hex")}` : `ns:${namespaceId}`;
  }

  /** Runs a change of `keys`, dropping them from this node's cache before and after (whether it committed or not). */
  private async changing<T>(namespaceId: string, keys: readonly (Buffer | { key: Buffer })[], change: () => Promise<T>): Promise<T> {
    const names = keys.map((k) => (Buffer.isBuffer(k) ? k : k.key).toString("utf8"));
    this.cache?.dropKeys(namespaceId, names);
    try {
      return await change();
    } finally {
      this.cache?.dropKeys(namespaceId, names);
    }
  }

  async delete(namespaceId: string, key: string): Promise<void> {
    checkKey(key);
    await this.deleteKeys(namespaceId, [Buffer.from(key, "utf8")]);
  }

  async deleteMany(namespaceId: string, keys: readonly string[]): Promise<void> {
    const bufs = checkKeysToDelete(keys);
    await this.deleteKeys(namespaceId, bufs);
  }

  /** One statement deletes every key (all or nothing) and announces it; their content goes after. */
  private async deleteKeys(namespaceId: string, keys: readonly Buffer[]): Promise<void> {
    if (!keys.length) return;
    const what = this.changeOf(namespaceId, keys);
    const row = await this.changing(namespaceId, keys, () => this.pg.row<{ removed: string[] }>(DELETE_ENTRIES, [namespaceId, keys, ...this.sqlNotice(what)]));
    await this.announced(what);
    await this.dropContent(row!.removed);
  }

  async list(namespaceId: string, opts: KvListOptions = {}): Promise<KvListResult> {
    const range = listRange(opts);
    const params: unknown[] = [namespaceId, nowSeconds()];
    const where = ["ns_id = $1", "(expiration IS NULL OR expiration > $2)"];
    const bound = (op: string, key: Buffer) => where.push(`key ${op} $${params.push(key)}`);
    if (range.after) bound(">", range.after);
    else if (range.from) bound(">=", range.from);
    if (range.before) bound("<", range.before);
    // One extra row tells whether another page exists.
    const rows = await this.pg.rows<{ key: Buffer; expiration: string | null; metadata: string | null }>(
      `SELECT key, expiration, metadata FROM kv.entries WHERE ${where.join(" AND ")} ORDER BY key LIMIT $${params.push(range.limit + 1)}`,
      params,
    );
    return listResult(
      rows.map((r): ListRow => ({ ...r, expiration: seconds(r.expiration) })),
      range.limit,
    );
  }

  async purgeExpired(now = nowSeconds()): Promise<number> {
    let total = 0;
    for (;;) {
      // SKIP LOCKED: nodes purging at the same time take different rows instead of waiting for each other.
      const rows = await this.pg.rows<{ content_id: string | null }>(
        `DELETE FROM kv.entries WHERE (ns_id, key) IN
           (SELECT ns_id, key FROM kv.entries WHERE expiration IS NOT NULL AND expiration <= $1 LIMIT $2 FOR UPDATE SKIP LOCKED)
         RETURNING content_id`,
        [now, PURGE_BATCH],
      );
      await this.dropContent(rows.flatMap((r) => (r.content_id ? [r.content_id] : [])));
      total += rows.length;
      if (rows.length < PURGE_BATCH) return total;
    }
  }

  gcContent(graceMs?: number): Promise<number> {
    return this.content.gc(
      async (id) =>
        (await this.pg.row(
          "SELECT 1 WHERE EXISTS (SELECT 1 FROM kv.entries WHERE content_id = $1) OR EXISTS (SELECT 1 FROM kv.bulk_staged WHERE content_id = $1)",
          [id],
        )) !== undefined,
      graceMs,
    );
  }

  /** Stores a value too big to live in a row in the content store; returns its id. */
  async putContent(value: Buffer): Promise<string> {
    return (await this.content.put(value)).id;
  }

  /** Content is deleted only after the rows naming it are gone; what cannot be deleted now is left for gcContent. */
  async dropContent(ids: readonly string[]): Promise<void> {
    for (const id of ids) await this.content.delete(id).catch(() => undefined);
  }
}
