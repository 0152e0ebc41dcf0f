import type { D1Engine } from "./engine/engine.js";
import { planQueries, type D1Query, type D1Value } from "./engine/plan.js";
import type { D1Meta, StatementResult } from "./engine/runner.js";
import { D1Errors } from "./errors.js";
import type { D1DatabaseRecord, D1Store } from "./store.js";

/** A statement's rows as objects keyed by column (a later column of the same name wins, as in the hosted D1). */
export function asRowsOfObjects(r: StatementResult): Record<string, D1Value>[] {
  return r.rows.map((row) => {
    // Column names are the user's SQL: never keys on a plain object's prototype chain.
    const o = Object.create(null) as Record<string, D1Value>;
    r.columns.forEach((c, i) => (o[c] = row[i]!));
    return o;
  });
}

/** The v4 `query` answer of one statement. */
export const asQueryResult = (r: StatementResult): { results: Record<string, D1Value>[]; success: true; meta: D1Meta } => ({
  results: asRowsOfObjects(r),
  success: true,
  meta: r.meta,
});

/** The v4 `raw` answer of one statement. */
export const asRawResult = (r: StatementResult) => ({ results: { columns: r.columns, rows: r.rows }, success: true as const, meta: r.meta });

/**
 * The account-checked way in to a database's SQL, shared by the v4 routes and the worker binding: a database is
 * found only in the account that asks, and its SQL is planned (split, guarded, parameters checked) before the
 * engine runs it in one transaction.
 */
export class D1Databases {
  constructor(
    readonly store: D1Store,
    readonly engine: D1Engine,
  ) {}

  /** The account's database `uuid`, or D1Errors.databaseNotFound. */
  async get(accountId: string, uuid: string): Promise<D1DatabaseRecord> {
    const db = await this.store.getDatabase(accountId, uuid);
    if (!db) throw D1Errors.databaseNotFound();
    return db;
  }

  /** Runs the queries in one transaction; the results of each query's statements (a query may hold several), by query. */
  async query(accountId: string, uuid: string, queries: readonly D1Query[]): Promise<StatementResult[][]> {
    const planned = planQueries(queries);
    await this.get(accountId, uuid);
    const results = await this.engine.query(accountId, uuid, planned);
    const byQuery: StatementResult[][] = queries.map(() => []);
    results.forEach((r, i) => byQuery[planned[i]!.query]!.push(r));
    return byQuery;
  }

  async delete(accountId: string, uuid: string): Promise<void> {
    await this.store.deleteDatabase(accountId, uuid);
    await this.engine.drop(uuid);
  }
}
