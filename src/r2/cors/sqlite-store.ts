import type { Db } from "../../core/db/sqlite.js";
import { R2Errors } from "../errors.js";
import { R2Limits } from "../limits.js";
import { type R2CorsRule } from "../store.js";

/** Bucket CORS rules in SQLite (`bucket_cors`, one JSON row a bucket, removed with the bucket). */
export class SqliteBucketCors {
  private readonly q;

  constructor(db: Db) {
    this.q = {
      get: db.prepare<[number], { rules: string }>("SELECT rules FROM bucket_cors WHERE bucket_id = ?"),
      put: db.prepare("INSERT INTO bucket_cors (bucket_id, rules) VALUES (?, ?) ON CONFLICT(bucket_id) DO UPDATE SET rules = excluded.rules"),
      delete: db.prepare("DELETE FROM bucket_cors WHERE bucket_id = ?"),
      byName: db.prepare<[string], { account_id: string; rules: string }>(
        "SELECT b.account_id, c.rules FROM buckets b JOIN bucket_cors c ON c.bucket_id = b.id WHERE b.name = ? ORDER BY b.account_id",
      ),
    };
  }

  get(bucketId: number): R2CorsRule[] | undefined {
    const row = this.q.get.get(bucketId);
    return row && (JSON.parse(row.rules) as R2CorsRule[]);
  }

  put(bucketId: number, rules: R2CorsRule[]): void {
    if (!Array.isArray(rules) || rules.length === 0 || rules.length > R2Limits.maxCorsRules) throw R2Errors.corsRuleCount();
    this.q.put.run(bucketId, JSON.stringify(rules));
  }

  delete(bucketId: number): void {
    this.q.delete.run(bucketId);
  }

  byName(name: string): { accountId: string; rules: R2CorsRule[] }[] {
    return this.q.byName.all(name).map((r) => ({ accountId: r.account_id, rules: JSON.parse(r.rules) as R2CorsRule[] }));
  }
}
