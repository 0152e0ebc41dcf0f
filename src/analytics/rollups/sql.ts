import { DIMENSIONS, SUMS, type RollupGroup, type RollupQuery, type RollupRow } from "./store.js";

/** The SQL both backends share (`?` placeholders; the PostgreSQL store numbers them). */
const dimCols = Array.from({ length: DIMENSIONS }, (_, i) => `d${i + 1}`);
const sumCols = Array.from({ length: SUMS }, (_, i) => `s${i + 1}`);

/** The table of hourly rollups beside a table of minute ones (`minute` holds the hour's start there). */
export const hourTable = (table: string) => table.replace(/minute_rollups$/, "hour_rollups");

/**
 * Statements on the minute rollups and the hourly ones beside them: every row is added to both (the hour's row is
 * the sum of its minutes), so a query over days reads one row per hour instead of sixty (querySql).
 */
export function rollupSql(table: string) {
  const cols = ["dataset", "scope", "account_id", "minute", ...dimCols, "node_id", "count", ...sumCols];
  const key = ["dataset", "scope", "minute", ...dimCols, "node_id"];
  const add = (t: string) => `INSERT INTO ${t} (${cols.join(", ")}) VALUES (${cols.map(() => "?").join(", ")})
          ON CONFLICT (${key.join(", ")}) DO UPDATE SET count = ${t}.count + excluded.count, ${sumCols
            .map((s) => `${s} = ${t}.${s} + excluded.${s}`)
            .join(", ")}`;
  const hours = hourTable(table);
  return {
    add: add(table),
    addHour: add(hours),
    prune: `DELETE FROM ${table} WHERE minute < ?`,
    // An hour goes once all of its minutes are gone.
    pruneHours: `DELETE FROM ${hours} WHERE minute < ? - 3540`,
    deleteScope: `DELETE FROM ${table} WHERE scope = ?`,
    deleteScopeHours: `DELETE FROM ${hours} WHERE scope = ?`,
  };
}

/** The parameters of a row's hourly row. */
export function addHourParams(nodeId: string, r: RollupRow): unknown[] {
  return addParams(nodeId, { ...r, minute: r.minute - (r.minute % 3600) });
}

export function addParams(nodeId: string, r: RollupRow): unknown[] {
  const dims = dimCols.map((_, i) => r.dims[i] ?? "");
  const sums = sumCols.map((_, i) => r.sums[i] ?? 0);
  return [r.dataset, r.scope, r.accountId, r.minute, ...dims, nodeId, r.count, ...sums];
}

const BUCKET_SECONDS = { minute: 60, five_minutes: 300, fifteen_minutes: 900, hour: 3600, day: 86_400 } as const;

function groupExpr(g: RollupGroup): string {
  if ("dim" in g) return dimCols[g.dim];
  const s = BUCKET_SECONDS[g.time];
  return s === 60 ? "minute" : `(minute - (minute % ${s}))`;
}

/**
 * The rows a query reads: the hourly rollups for the whole hours of its range and the minute ones for the minutes
 * at either end, unless it groups by less than an hour (then minutes only).
 */
function source(table: string, q: RollupQuery, sums: readonly string[]): { sql: string; params: unknown[] } {
  const cols = ["minute", ...dimCols, "count", ...sums].join(", ");
  const fromHour = Math.ceil(q.from / 3600) * 3600;
  const toHour = Math.floor(q.to / 3600) * 3600;
  const subHour = q.groupBy.some((g) => "time" in g && BUCKET_SECONDS[g.time] < 3600);
  if (subHour || fromHour >= toHour)
    return { sql: `SELECT ${cols} FROM ${table} WHERE dataset = ? AND scope = ? AND minute >= ? AND minute < ?`, params: [q.dataset, q.scope, q.from, q.to] };
  return {
    sql:
      `SELECT ${cols} FROM ${hourTable(table)} WHERE dataset = ? AND scope = ? AND minute >= ? AND minute < ? UNION ALL ` +
      `SELECT ${cols} FROM ${table} WHERE dataset = ? AND scope = ? AND ((minute >= ? AND minute < ?) OR (minute >= ? AND minute < ?))`,
    params: [q.dataset, q.scope, fromHour, toHour, q.dataset, q.scope, q.from, fromHour, toHour, q.to],
  };
}

/** The grouped SELECT of a query (its parameters with it); integers only come from the code, never from the caller. */
export function querySql(table: string, q: RollupQuery): { sql: string; params: unknown[] } {
  const groups = q.groupBy.map(groupExpr);
  // Only the sums asked for: adding up and reading all eight for every group was half of a query's time in SQLite.
  // (and those it orders by).
  const ordered = q.orderBy.flatMap((o) => (typeof o.by === "object" && "sum" in o.by ? [o.by.sum] : []));
  const wanted = q.sums ? sumCols.filter((_, i) => q.sums!.includes(i) || ordered.includes(i)) : sumCols;
  const select = [...groups.map((g, i) => `${g} AS k${i}`), "SUM(count) AS count", ...wanted.map((s) => `SUM(${s}) AS ${s}`)];
  const rows = source(table, q, wanted);
  const where = ["1 = 1"];
  const params: unknown[] = [...rows.params];
  for (const w of q.where) {
    if (w.op === "in") {
      // An empty list matches nothing, as hosted.
      where.push(w.values.length ? `${dimCols[w.dim]} IN (${w.values.map(() => "?").join(", ")})` : "1 = 0");
      params.push(...w.values);
      continue;
    }
    where.push(`${dimCols[w.dim]} ${w.op === "eq" ? "=" : "<>"} ?`);
    params.push(w.value);
  }
  const orderExpr = (by: RollupQuery["orderBy"][number]["by"]) => (by === "count" ? "SUM(count)" : "sum" in by ? `SUM(${sumCols[by.sum]})` : `k${by.group}`);
  const order = q.orderBy.map((o) => `${orderExpr(o.by)} ${o.desc ? "DESC" : "ASC"}`);
  // Ties broken by the groups, so pages and repeated queries agree.
  order.push(...groups.map((_, i) => `k${i} ASC`));
  const sql =
    `SELECT ${select.join(", ")} FROM (${rows.sql}) AS r WHERE ${where.join(" AND ")}` +
    (groups.length ? ` GROUP BY ${groups.join(", ")}` : "") +
    (order.length ? ` ORDER BY ${order.join(", ")}` : "") +
    ` LIMIT ${Math.trunc(q.limit)}`;
  return { sql, params };
}

export interface GroupDbRow {
  [k: string]: unknown;
}

export function toGroupRow(q: RollupQuery, row: GroupDbRow) {
  return {
    keys: q.groupBy.map((g, i) => ("dim" in g ? String(row[`k${i}`]) : Number(row[`k${i}`]))),
    count: Number(row.count ?? 0),
    sums: sumCols.map((s) => Number(row[s] ?? 0)),
  };
}

/** A rollup table with `sums` sum columns (the minute and hour tables differ in nothing else). */
function tableDdl(table: string, text: string, int: string, sums: number): string {
  const sumCols = Array.from({ length: sums }, (_, i) => `s${i + 1}`);
  return `CREATE TABLE ${table} (
     dataset ${text} NOT NULL,
     scope ${text} NOT NULL,
     account_id ${text} NOT NULL,
     minute ${int} NOT NULL,
     ${dimCols.map((d) => `${d} ${text} NOT NULL DEFAULT ''`).join(",\n     ")},
     node_id ${text} NOT NULL,
     count ${int} NOT NULL,
     ${sumCols.map((s) => `${s} ${int} NOT NULL DEFAULT 0`).join(",\n     ")},
     PRIMARY KEY (dataset, scope, minute, ${dimCols.join(", ")}, node_id)
   )`;
}

/** The table as its first migration made it (four sums; `moreSumsDdl` adds the rest). */
export function rollupTableDdl(table: string, text: string, int: string): string {
  return tableDdl(table, text, int, 4);
}

/** The second migration: sums s5..s8 (AI gateway requests carry seven numbers). */
export function moreSumsDdl(table: string, int: string): string {
  return Array.from({ length: 4 }, (_, i) => `ALTER TABLE ${table} ADD COLUMN s${i + 5} ${int} NOT NULL DEFAULT 0;`).join("\n");
}

/** The third migration: the hourly rollups (every column of the minute ones, a row per hour). */
export function hourTableDdl(table: string, text: string, int: string): string {
  return tableDdl(table, text, int, SUMS);
}
