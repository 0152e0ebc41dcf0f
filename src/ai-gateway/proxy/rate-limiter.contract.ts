import assert from "node:assert/strict";
import { storeContract } from "../../core/testing/contract.js";
import type { Gateway } from "../gateways/store.js";
import { A, B, sampleSettings } from "../testing/sample-log.js";
import type { RateLimiter } from "./rate-limiter.js";

/** A gateway of account A limited to `limit` per minute. */
const limited = (id: string, limit: number, technique: "fixed" | "sliding", change: Partial<Gateway> = {}): Gateway => ({
  ...sampleSettings({ rate_limiting_limit: limit, rate_limiting_interval: 60, rate_limiting_technique: technique }),
  id,
  account_id: A,
  created_at: "2001-01-01T00:00:00.000Z",
  modified_at: "2001-01-01T00:00:00.000Z",
  ...change,
});
/** The start of a minute (the windows are clock-aligned). */
const T0 = 1_000_000_000_000 - (1_000_000_000_000 % 60_000);
const takes = async (rl: RateLimiter, g: Gateway, n: number, now: number) => {
  const out: boolean[] = [];
  for (let i = 0; i < n; i++) out.push(await rl.take(g, now));
  return out;
};

/** What a rate limiter does, wherever it counts (run by rate-limiter.test.ts in memory and pg-store.test.ts on PostgreSQL). */
export const describeRateLimiter = storeContract<RateLimiter>("RateLimiter", (it) => {
  it("fixed windows: the limit per clock-aligned window, a fresh count at the boundary", async (rl) => {
    const g = limited("f", 2, "fixed");
    assert.deepEqual(await takes(rl, g, 3, T0 + 59_000), [true, true, false]);
    assert.deepEqual(await takes(rl, g, 3, T0 + 60_000), [true, true, false], "a fixed window clears at the boundary");
  });

  it("sliding windows weigh the previous window by how much of it the trailing interval still covers", async (rl) => {
    const g = limited("s", 2, "sliding");
    assert.deepEqual(await takes(rl, g, 2, T0 + 59_000), [true, true]);
    // Just after the boundary the previous window's 2 weigh ~1.97: one more fits, a second does not (fixed would allow 2).
    assert.deepEqual(await takes(rl, g, 2, T0 + 61_000), [true, false]);
    assert.deepEqual(await takes(rl, g, 1, T0 + 100_000), [true], "later the previous window weighs less");
    // Refused before the window's first request: a refusal counts nothing, so nothing is left over either.
    const busy = limited("busy", 3, "sliding");
    assert.deepEqual(await takes(rl, busy, 4, T0 + 59_999), [true, true, true, false]);
    assert.deepEqual(await takes(rl, busy, 1, T0 + 60_000), [false], "the previous window's 3 weigh all of 3");
  });

  it("counts each gateway of each account apart; a changed gateway (new version) starts a fresh window; no limit, no count", async (rl) => {
    const g = limited("g", 1, "fixed");
    assert.deepEqual(await takes(rl, g, 2, T0), [true, false]);
    assert.deepEqual(await takes(rl, { ...g, account_id: B }, 1, T0), [true], "the same id in another account is another gateway");
    assert.deepEqual(await takes(rl, { ...g, id: "other" }, 1, T0), [true]);
    assert.deepEqual(await takes(rl, { ...g, modified_at: "2001-01-02T00:00:00.000Z" }, 2, T0 + 1), [true, false], "changed settings, fresh count");
    assert.deepEqual(await takes(rl, limited("off", 0, "fixed"), 3, T0), [true, true, true]);
    assert.deepEqual(await takes(rl, limited("no-interval", 1, "fixed", { rate_limiting_interval: 0 }), 3, T0), [true, true, true]);
  });
});
