import type { Db } from "../../core/db/sqlite.js";
import { PURGE_BUCKETS_TABLE, takeSql, toTakeResult, type BucketShape, type PurgeLimitStore, type TakeResult, type TakeRow } from "./purge-limits-store.js";

/** PurgeLimitStore on SQLite (`<state>/db/edge-purge-limits.sqlite`): survives a restart, as the hosted buckets do. */
export class SqlitePurgeLimitStore implements PurgeLimitStore {
  private readonly q;

  constructor(db: Db) {
    this.q = db.prepare<[Record<string, unknown>], TakeRow>(takeSql(PURGE_BUCKETS_TABLE).replace(/:(\w+)/g, "@$1"));
  }

  async take(accountId: string, kind: string, shape: BucketShape, n: number, now: number): Promise<TakeResult> {
    return toTakeResult(this.q.get({ account: accountId, kind, size: shape.size, n, rate: shape.perSecond, now: Math.floor(now) }));
  }
}
