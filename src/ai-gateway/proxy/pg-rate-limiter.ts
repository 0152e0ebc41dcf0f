import type { Postgres } from "../../core/db/postgres.js";
import { isRateLimited, rateWindow, type RateLimiter } from "./rate-limiter.js";
import type { Gateway } from "../gateways/store.js";

/**
 * Counts one request in the gateway's current window, in one statement: the window's row is created or, when
 * under the limit, incremented (`INSERT … ON CONFLICT … DO UPDATE … WHERE … RETURNING`). PostgreSQL locks the row
 * for the increment, so requests of every node take turns on it, and one that would pass the limit gets no row back.
 * A sliding count adds the previous window's count times its weight ($6; 0 for `fixed`, which skips reading it).
 */
const TAKE = `
  INSERT INTO ai_gateway.rate_windows AS w (account_id, gateway_id, version, window_start, count, expires_at)
    SELECT $1, $2, $3, $4, 1, $8
    WHERE CASE WHEN $6::float8 = 0 THEN 0 ELSE coalesce((SELECT p.count FROM ai_gateway.rate_windows p
            WHERE p.account_id = $1 AND p.gateway_id = $2 AND p.version = $3 AND p.window_start = $5), 0) * $6::float8 END < $7
  ON CONFLICT (account_id, gateway_id, version, window_start) DO UPDATE SET count = w.count + 1
    WHERE w.count + CASE WHEN $6::float8 = 0 THEN 0 ELSE coalesce((SELECT p.count FROM ai_gateway.rate_windows p
            WHERE p.account_id = $1 AND p.gateway_id = $2 AND p.version = $3 AND p.window_start = $5), 0) * $6::float8 END < $7
  RETURNING w.count`;

/**
 * One counter per gateway and window for all nodes, in `ai_gateway.rate_windows`: two nodes together never let
 * more requests through than the limit. Costs one PostgreSQL round trip per request of a gateway with a limit;
 * gateways without one never ask. When PostgreSQL is unreachable the request fails (503): a limit that cannot be
 * counted is not enforced by guessing.
 */
export class PgRateLimiter implements RateLimiter {
  constructor(private readonly pg: Postgres) {}

  take(g: Gateway, now = Date.now()): boolean | Promise<boolean> {
    if (!isRateLimited(g)) return true;
    const { start, size, previousWeight } = rateWindow(g, now);
    // After the next window ends, no sliding count reads this one.
    const expires = Math.min(start + 2 * size, Number.MAX_SAFE_INTEGER);
    return this.pg
      .row(TAKE, [g.account_id, g.id, g.modified_at, start, start - size, previousWeight, g.rate_limiting_limit, expires])
      .then((counted) => counted !== undefined);
  }

  /** Nothing in memory: a changed gateway's count has a new key (its version). */
  forget(): void {}

  /** Deletes windows no count reads any more; returns how many. */
  sweep(now = Date.now()): Promise<number> {
    return this.pg.execute("DELETE FROM ai_gateway.rate_windows WHERE expires_at < $1", [now]);
  }
}
