import type { Postgres } from "../../core/db/postgres.js";
import {
  PURGE_BUCKETS_TABLE,
  PURGE_LIMITS_AREA,
  takeSql,
  toTakeResult,
  type BucketShape,
  type PurgeLimitStore,
  type TakeResult,
  type TakeRow,
} from "./purge-limits-store.js";

const NAMES = ["account", "kind", "size", "n", "rate", "now"] as const;
const SQL = takeSql(`${PURGE_LIMITS_AREA}.${PURGE_BUCKETS_TABLE}`).replace(/:(\w+)/g, (_, name: string) => {
  const i = NAMES.indexOf(name as (typeof NAMES)[number]);
  if (i < 0) throw new Error(`unknown parameter ${name}`);
  return `$${i + 1}`;
});

/** PurgeLimitStore on PostgreSQL (schema `edge_purge_limits`): one bucket per account for every node of the cluster. */
export class PgPurgeLimitStore implements PurgeLimitStore {
  constructor(private readonly pg: Postgres) {}

  async take(accountId: string, kind: string, shape: BucketShape, n: number, now: number): Promise<TakeResult> {
    return toTakeResult(await this.pg.row<TakeRow>(SQL, [accountId, kind, shape.size, n, shape.perSecond, Math.floor(now)]));
  }
}
