import type { PgMigration } from "../db/pg-migrations.js";
import type { Migration } from "../db/sqlite.js";

/** One row as both backends give it: column name → value (Buffers for BLOB/BYTEA). Column names are ours, never a user's. */
export type Row = Record<string, unknown>;

/** The backend a row is read from or written to. */
export type Side = "sqlite" | "postgresql";

/** What a table's `copyContent` may do with bodies while its row is on its way. */
export interface ContentCopy {
  /** Where the row goes. */
  readonly target: Side;
  /** Streams body `id` from the source's content store into the target's (bounded memory); returns the new id. */
  copy(id: string): Promise<string>;
  /** Stores `bytes` as a body in the target's content store; returns its id. */
  put(bytes: Buffer): Promise<string>;
  /** The whole of body `id` from the source's content store, for a small body the target keeps in the row. */
  read(id: string): Promise<Buffer>;
}

/**
 * How one table is copied. Both backends hold it under the same name and columns (`<area schema>.<table>` on
 * PostgreSQL, `<table>` in the area's SQLite file), which is how every area's stores are written.
 */
export interface TableCopy {
  table: string;
  /** The columns copied, as both backends name them. */
  columns: readonly string[];
  /** Columns that identify a row in both backends: rows are read in this order, and a row already there is left alone. */
  key: readonly string[];
  /**
   * A number each backend assigns itself (R2 bucket ids): not copied; the target assigns its own, and the
   * `references` of later tables are translated to it.
   */
  generatedId?: string;
  /** Columns holding another table's `generatedId`, by that table's name (`{ bucket_id: "buckets" }`). */
  references?: Readonly<Record<string, string>>;
  /** SQL read in place of a column on one backend (KV values that bulk writes keep in SQLite's `blobs` table). */
  readAs?: Partial<Record<Side, Readonly<Record<string, string>>>>;
  /**
   * Columns only one backend has, read with the row when it is the source and written when it is the target (null
   * unless `copyContent` sets them): `{ postgresql: ["body"] }`, R2 bodies PostgreSQL keeps in the row.
   */
  onlyOn?: Partial<Record<Side, readonly string[]>>;
  /** Columns only one backend has, with the value every copied row gets there (`{ sqlite: { sealed: 1 } }`). */
  writeAs?: Partial<Record<Side, Readonly<Record<string, unknown>>>>;
  /** Columns that may hold big values: read with their row only when small, else alone (memory stays bounded). */
  large?: readonly string[];
  /** Copies the bodies the row names into the target's content store; returns the row naming the copies. */
  copyContent?(row: Row, content: ContentCopy): Promise<Row>;
}

/**
 * One area's part of `edgecli state copy`: where its rows live in each backend, and its tables in an order in
 * which every row's references are copied before it. Each area keeps this in its own `copy.ts`; the list of them is
 * src/state-copiers.ts.
 */
export interface AreaCopier {
  /** Shown in progress and in the count check. */
  name: string;
  /**
   * `<state>/db/<database>.sqlite` and the migrations that make it; `smallBodies`: the table of that database
   * that holds the content store's small bodies (core/content/db-small-store.ts), when the area keeps them there;
   * `smallBodyBytes`: the largest body kept there (the area's own policy; DbSmallContentStore's default otherwise).
   */
  sqlite: { database: string; migrations: readonly Migration[]; smallBodies?: string; smallBodyBytes?: number };
  /** The PostgreSQL schema and its migrations. */
  postgres: { schema: string; migrations: readonly PgMigration[] };
  /** The area's content store (files under `<state>/content/<name>/`, or keys `<name>/<id>` in the bucket). */
  content?: string;
  tables: readonly TableCopy[];
}

/**
 * State of an area that has no PostgreSQL store yet and stays on one machine (D1 files, Durable Objects, DNSSEC keys,
 * zone transfer settings). A copy into PostgreSQL refuses while the source state directory holds any, naming it,
 * unless told to leave it behind: otherwise it would be lost without a word. Each area lists its own in its copy.ts.
 */
export interface NodeOnlyState {
  /** `<state>/db/<database>.sqlite`; a missing file holds nothing. */
  database: string;
  /** A query answering one row `{ n }`: how many things would stay behind. */
  count: string;
  /** What they are, as the refusal names them ("D1 databases"). */
  what: string;
}
