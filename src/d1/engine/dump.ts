import type { Db } from "../../core/db/sqlite.js";

export interface DumpOptions {
  noSchema?: boolean;
  noData?: boolean;
  /** Only these tables (all when empty). */
  tables?: readonly string[];
}

const quoteName = (name: string) => `"${name.replaceAll('"', '""')}"`;

/** A value as an SQL literal: NULL, a number, a '…' string, an X'…' blob. */
function literal(v: unknown): string {
  if (v === null || v === undefined) return "NULL";
  if (typeof v === "number") return Number.isFinite(v) ? String(v) : v > 0 ? "9e999" : v < 0 ? "-9e999" : "NULL";
  if (typeof v === "bigint") return v.toString();
  if (Buffer.isBuffer(v)) return `X'${v.toString("hex")}'`;
  return `'${String(v).replaceAll("'", "''")}'`;
}

/**
 * The database as SQL that rebuilds it (what `d1 export` gives, in the shape of the hosted export: deferred foreign
 * keys, each table's CREATE and INSERTs, then indexes, triggers and views), one statement a line, produced lazily so
 * a large database is written out without being held in memory. Virtual tables are created and filled through
 * themselves; their shadow tables (which SQLite makes for them) and SQLite's own tables are left out.
 */
export function* dumpDatabase(db: Db, opts: DumpOptions = {}): Generator<string> {
  const only = opts.tables && opts.tables.length > 0 ? new Set(opts.tables) : undefined;
  const listed = db.prepare("SELECT name, type FROM pragma_table_list WHERE schema = 'main'").all() as { name: string; type: string }[];
  const kinds = new Map(listed.map((t) => [t.name, t.type]));
  const objects = db.prepare("SELECT type, name, tbl_name, sql FROM sqlite_schema WHERE sql IS NOT NULL ORDER BY rowid").all() as {
    type: string;
    name: string;
    tbl_name: string;
    sql: string;
  }[];
  const wanted = (table: string) => !table.startsWith("sqlite_") && table !== "_cf_KV" && kinds.get(table) !== "shadow" && (!only || only.has(table));
  yield "PRAGMA defer_foreign_keys=TRUE;";
  const tables = objects.filter((o) => o.type === "table" && wanted(o.name));
  for (const t of tables) {
    if (!opts.noSchema) yield `${t.sql};`;
    if (opts.noData) continue;
    const select = db.prepare(`SELECT * FROM ${quoteName(t.name)}`);
    const into = `INSERT INTO ${quoteName(t.name)} VALUES(`;
    for (const row of select.raw(true).iterate() as Iterable<unknown[]>) yield `${into}${row.map(literal).join(",")});`;
  }
  if (!opts.noData && !only && kinds.has("sqlite_sequence")) {
    const seq = db.prepare("SELECT name, seq FROM sqlite_sequence").raw(true).all() as unknown[][];
    if (seq.length > 0) yield "DELETE FROM sqlite_sequence;";
    for (const row of seq) yield `INSERT INTO sqlite_sequence VALUES(${row.map(literal).join(",")});`;
  }
  if (opts.noSchema) return;
  for (const o of objects) if (o.type !== "table" && wanted(o.tbl_name)) yield `${o.sql};`;
}
