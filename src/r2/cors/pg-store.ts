import type { SqlRunner } from "../../core/db/postgres.js";
import { R2Errors } from "../errors.js";
import { R2Limits } from "../limits.js";
import { type R2CorsRule } from "../store.js";

/** Bucket CORS rules on PostgreSQL (`r2.bucket_cors`, one JSON row a bucket, removed with the bucket). */
export class PgBucketCors {
  constructor(private readonly pg: SqlRunner) {}

  async get(bucketId: string): Promise<R2CorsRule[] | undefined> {
    const row = await this.pg.row<{ rules: string }>("SELECT rules FROM r2.bucket_cors WHERE bucket_id = $1", [bucketId]);
    return row && (JSON.parse(row.rules) as R2CorsRule[]);
  }

  /** `tx` holds the bucket's row locked, so that the bucket cannot go meanwhile. */
  async put(tx: SqlRunner, bucketId: string, rules: R2CorsRule[]): Promise<void> {
    if (!Array.isArray(rules) || rules.length === 0 || rules.length > R2Limits.maxCorsRules) throw R2Errors.corsRuleCount();
    await tx.execute("INSERT INTO r2.bucket_cors (bucket_id, rules) VALUES ($1, $2) ON CONFLICT (bucket_id) DO UPDATE SET rules = excluded.rules", [
      bucketId,
      JSON.stringify(rules),
    ]);
  }

  async delete(bucketId: string): Promise<void> {
    await this.pg.execute("DELETE FROM r2.bucket_cors WHERE bucket_id = $1", [bucketId]);
  }

  async byName(name: string): Promise<{ accountId: string; rules: R2CorsRule[] }[]> {
    const rows = await this.pg.rows<{ account_id: string; rules: string }>(
      "SELECT b.account_id, c.rules FROM r2.buckets b JOIN r2.bucket_cors c ON c.bucket_id = b.id WHERE b.name = $1 ORDER BY b.account_id",
      [name],
    );
    return rows.map((r) => ({ accountId: r.account_id, rules: JSON.parse(r.rules) as R2CorsRule[] }));
  }
}
