import { existsSync } from "node:fs";
import { join } from "node:path";
import type { S3Client } from "@aws-sdk/client-s3";
import type { ObjectStoreLocation } from "../config.js";
import { DbSmallContentStore } from "../content/db-small-store.js";
import { FileContentStore } from "../content/file-store.js";
import type { ContentStore } from "../content/store.js";
import { migrateArea } from "../db/pg-migrations.js";
import { Postgres } from "../db/postgres.js";
import { openDatabase, type Db } from "../db/sqlite.js";
import { UserError } from "../errors.js";
import { serveUsing } from "../server/state-lock.js";
import type { AreaCopier, Row, Side, TableCopy } from "./area.js";

/** A value of a large column above this is read alone, not with its page. */
export const LARGE_INLINE_BYTES = 256 * 1024;
/** The prefix of the column that carries a large column's length in a page. */
const LENGTH_OF = "__length_of_";

/** One area on one side of a copy: its rows (through plain SQL on the tables the area copier names) and its bodies. */
export interface AreaRows {
  count(t: TableCopy): Promise<number>;
  /** Up to `limit` rows in key order after the key `after`; a large column over LARGE_INLINE_BYTES comes back null. */
  page(t: TableCopy, after: readonly unknown[] | undefined, limit: number): Promise<Row[]>;
  /** The value of a large column `page` left out (`lengthOf` says which). */
  readLarge(t: TableCopy, row: Row, column: string): Promise<unknown>;
  /** Which of these rows (by key) are here: key string → the row's generated id (or true). */
  existing(t: TableCopy, rows: readonly Row[]): Promise<Map<string, unknown>>;
  /** Inserts the rows, leaving any that conflict; returns key string → generated id (or true) of those inserted. */
  insert(t: TableCopy, rows: readonly Row[]): Promise<Map<string, unknown>>;
  readonly content?: ContentStore;
}

/** Where a copy reads or writes: a state directory, or PostgreSQL and a bucket. */
export interface CopySide {
  readonly kind: Side;
  /** For messages, without credentials. */
  readonly where: string;
  open(area: AreaCopier, role: "source" | "target"): Promise<AreaRows>;
  /** Why the platform is running on this side (a copy must not run then), or undefined when it is not. */
  inUse(): Promise<string | undefined>;
  close(): Promise<void>;
}

/** The length of a large column, or undefined when `page` read it whole. */
export function lengthOf(row: Row, column: string): number | undefined {
  const n = row[LENGTH_OF + column];
  return n === null || n === undefined ? undefined : Number(n);
}

/** A row's key as one string (BIGINT ids come back as strings from PostgreSQL and numbers from SQLite). */
export function keyString(t: TableCopy, row: Row): string {
  return t.key.map((k) => (Buffer.isBuffer(row[k]) ? `x${(row[k] as Buffer).toString("hex")}` : `s${String(row[k])}`)).join("\u0000");
}

const quote = (column: string) => `"${column}"`;

/** The SQL both dialects share; only placeholders differ (`?` or `$n`). */
class Statements {
  constructor(
    private readonly side: Side,
    private readonly qualify: (table: string) => string,
  ) {}

  private readExpr(t: TableCopy, column: string): string {
    return t.readAs?.[this.side]?.[column] ?? quote(column);
  }

  private placeholders(count: number, from = 1): string[] {
    return Array.from({ length: count }, (_, i) => (this.side === "sqlite" ? "?" : `$${from + i}`));
  }

  count(t: TableCopy): string {
    return `SELECT count(*) AS n FROM ${this.qualify(t.table)}`;
  }

  page(t: TableCopy, withCursor: boolean): string {
    const read = [...t.columns, ...(t.onlyOn?.[this.side] ?? []), ...(t.generatedId ? [t.generatedId] : [])].map((c) => {
      const expr = this.readExpr(t, c);
      if (!t.large?.includes(c)) return `${expr} AS ${quote(c)}`;
      return `CASE WHEN length(${expr}) <= ${LARGE_INLINE_BYTES} THEN ${expr} END AS ${quote(c)}, length(${expr}) AS ${quote(LENGTH_OF + c)}`;
    });
    const keys = t.key.map(quote).join(", ");
    const where = withCursor ? `WHERE (${keys}) > (${this.placeholders(t.key.length).join(", ")})` : "";
    return `SELECT ${read.join(", ")} FROM ${this.qualify(t.table)} ${where} ORDER BY ${keys} LIMIT ${this.placeholders(1, withCursor ? t.key.length + 1 : 1)[0]}`;
  }

  readOne(t: TableCopy, column: string): string {
    const match = t.key.map((k, i) => `${quote(k)} = ${this.placeholders(1, i + 1)[0]}`).join(" AND ");
    return `SELECT ${this.readExpr(t, column)} AS v FROM ${this.qualify(t.table)} WHERE ${match}`;
  }

  existing(t: TableCopy, rows: number): string {
    const ph = this.placeholders(rows * t.key.length);
    const match = Array.from({ length: rows }, (_, r) => `(${t.key.map((k, i) => `${quote(k)} = ${ph[r * t.key.length + i]}`).join(" AND ")})`);
    const cols = [...t.key, ...(t.generatedId ? [t.generatedId] : [])].map(quote).join(", ");
    return `SELECT ${cols} FROM ${this.qualify(t.table)} WHERE ${match.join(" OR ")}`;
  }

  /** The columns an insert on this side writes: the copied ones, then those only this side has. */
  written(t: TableCopy): string[] {
    return [...this.copied(t), ...Object.keys(t.writeAs?.[this.side] ?? {})];
  }

  /** The values of `row` for `written(t)`. */
  values(t: TableCopy, row: Row): unknown[] {
    return [...this.copied(t).map((c) => row[c] ?? null), ...Object.values(t.writeAs?.[this.side] ?? {})];
  }

  private copied(t: TableCopy): string[] {
    return [...t.columns, ...(t.onlyOn?.[this.side] ?? [])];
  }

  insert(t: TableCopy, rows: number): string {
    const columns = this.written(t);
    const ph = this.placeholders(rows * columns.length);
    const values = Array.from({ length: rows }, (_, r) => `(${ph.slice(r * columns.length, (r + 1) * columns.length).join(", ")})`);
    const returning = [...t.key, ...(t.generatedId ? [t.generatedId] : [])].map(quote).join(", ");
    return `INSERT INTO ${this.qualify(t.table)} (${columns.map(quote).join(", ")}) VALUES ${values.join(", ")} ON CONFLICT DO NOTHING RETURNING ${returning}`;
  }
}

const keyParams = (t: TableCopy, rows: readonly Row[]) => rows.flatMap((r) => t.key.map((k) => r[k]));
const found = (t: TableCopy, rows: readonly Row[]) => new Map(rows.map((r) => [keyString(t, r), t.generatedId ? r[t.generatedId] : true]));

/** SQLite takes no objects or booleans: JSON columns PostgreSQL keeps as JSONB come back parsed, and go in as text. */
function forSqlite(value: unknown): unknown {
  if (value === null || value === undefined || Buffer.isBuffer(value)) return value ?? null;
  if (typeof value === "boolean") return value ? 1 : 0;
  if (typeof value === "object") return JSON.stringify(value);
  return value;
}

// ---- a state directory ----------------------------------------------------------------------------------

/** The embedded backend: `<state>/db/<database>.sqlite` and `<state>/content/<name>/`. */
export function stateDirSide(stateDir: string): CopySide {
  const dbs: Db[] = [];
  return {
    kind: "sqlite",
    where: `the state directory ${stateDir}`,
    async open(area, role) {
      const file = join(stateDir, "db", `${area.sqlite.database}.sqlite`);
      const files = area.content ? new FileContentStore(join(stateDir, "content", area.content)) : undefined;
      // A source area that was never used has no file: it holds nothing (and is not created by reading it).
      if (role === "source" && !existsSync(file)) return emptyArea(files);
      const db = openDatabase(file, area.sqlite.migrations);
      dbs.push(db);
      const smallBodies = area.sqlite.smallBodies;
      const content = files && smallBodies ? new DbSmallContentStore(db, smallBodies, files, area.sqlite.smallBodyBytes) : files;
      const sql = new Statements("sqlite", (table) => table);
      return {
        content,
        count: async (t) => (db.prepare(sql.count(t)).get() as { n: number }).n,
        page: async (t, after, limit) => db.prepare(sql.page(t, after !== undefined)).all(...(after ?? []), limit) as Row[],
        readLarge: async (t, row, column) => (db.prepare(sql.readOne(t, column)).get(...t.key.map((k) => row[k])) as { v: unknown } | undefined)?.v,
        existing: async (t, rows) => found(t, rows.length ? (db.prepare(sql.existing(t, rows.length)).all(...keyParams(t, rows)) as Row[]) : []),
        insert: async (t, rows) => {
          const statement = db.prepare(sql.insert(t, 1));
          const inserted = db.transaction(() => rows.flatMap((r) => statement.all(...sql.values(t, r).map(forSqlite)) as Row[]))();
          return found(t, inserted);
        },
      };
    },
    async inUse() {
      const pid = serveUsing(stateDir);
      return pid === undefined ? undefined : `edgecli serve (pid ${pid}) is running on ${stateDir}`;
    },
    async close() {
      for (const db of dbs.splice(0)) db.close();
    },
  };
}

function emptyArea(content?: ContentStore): AreaRows {
  return {
    content,
    count: async () => 0,
    page: async () => [],
    readLarge: async () => null,
    existing: async () => new Map(),
    insert: async () => {
      throw new Error("an absent source area is never written");
    },
  };
}

// ---- PostgreSQL and a bucket ----------------------------------------------------------------------------

/** Rows in PostgreSQL (each area in its schema), bodies in the bucket under `<name>/`. */
export async function databaseSide(databaseUrl: string, objectStore: ObjectStoreLocation): Promise<CopySide> {
  const pg = new Postgres({ url: databaseUrl, poolSize: 4, applicationName: "edgecli state copy", statementTimeoutMs: 120_000 });
  let client: S3Client | undefined;
  const s3 = await import("../content/s3-store.js");
  const bucketWhere = `s3://${objectStore.bucket} at ${objectStore.endpoint ?? "AWS S3"}`;
  try {
    await pg.ping();
  } catch (err) {
    await pg.close();
    throw new UserError(`Cannot reach PostgreSQL at ${pg.location}: ${(err as Error).message}`);
  }
  client = s3.createObjectStoreClient(objectStore);
  try {
    await s3.pingBucket(client, objectStore.bucket);
  } catch (err) {
    client.destroy();
    await pg.close();
    const status = (err as { $metadata?: { httpStatusCode?: number } }).$metadata?.httpStatusCode;
    throw new UserError(
      `Cannot use the object store ${bucketWhere}: ${status === 404 ? "the bucket does not exist (create it first)" : (err as Error).message}`,
    );
  }
  return {
    kind: "postgresql",
    where: `PostgreSQL ${pg.location} and ${bucketWhere}`,
    async open(area) {
      await migrateArea(pg, area.postgres.schema, area.postgres.migrations);
      const content = area.content ? new s3.S3ContentStore(client!, objectStore.bucket, `${area.content}/`) : undefined;
      const sql = new Statements("postgresql", (table) => `${area.postgres.schema}.${table}`);
      return {
        content,
        count: async (t) => Number((await pg.row<{ n: string }>(sql.count(t)))!.n),
        page: (t, after, limit) => pg.rows<Row>(sql.page(t, after !== undefined), [...(after ?? []), limit]),
        readLarge: async (t, row, column) =>
          (
            await pg.row<{ v: unknown }>(
              sql.readOne(t, column),
              t.key.map((k) => row[k]),
            )
          )?.v,
        existing: async (t, rows) => found(t, rows.length ? await pg.rows<Row>(sql.existing(t, rows.length), keyParams(t, rows)) : []),
        insert: async (t, rows) =>
          found(
            t,
            rows.length
              ? await pg.rows<Row>(
                  sql.insert(t, rows.length),
                  rows.flatMap((r) => sql.values(t, r)),
                )
              : [],
          ),
      };
    },
    async inUse() {
      const nodes = await runningNodes(pg);
      return nodes === 0 ? undefined : `${nodes} platform node${nodes > 1 ? "s are" : " is"} connected to ${pg.location}`;
    },
    async close() {
      client?.destroy();
      client = undefined;
      await pg.close();
    },
  };
}

/** How many `edgecli serve` nodes are connected to the database: each keeps one listening connection, `edge-bus <node id>`. */
async function runningNodes(pg: Postgres): Promise<number> {
  const row = await pg.row<{ n: string }>(
    "SELECT count(DISTINCT application_name) AS n FROM pg_stat_activity WHERE datname = current_database() AND application_name LIKE 'edge-bus %'",
  );
  return Number(row?.n ?? 0);
}
