import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { RateLimiter } from "./rate-limiter.js";

describe("AI gateway rate limiter", () => {
  it("rate limits in fixed and sliding windows", () => {
    const rl = new RateLimiter();
    const t0 = 1_000_000_000_000 - (1_000_000_000_000 % 60_000);
    assert.deepEqual(
      [1, 2, 3].map(() => rl.take("f", 2, 60, "fixed", t0 + 59_000)),
      [true, true, false],
    );
    assert.equal(rl.take("f", 2, 60, "fixed", t0 + 60_000), true, "a fixed window clears at the boundary");
    assert.deepEqual(
      [1, 2].map(() => rl.take("s", 2, 60, "sliding", t0 + 59_000)),
      [true, true],
    );
    // Just after the boundary the previous window's 2 weigh ~1.97: one more fits, a second does not (fixed would allow 2).
    assert.deepEqual(
      [1, 2].map(() => rl.take("s", 2, 60, "sliding", t0 + 61_000)),
      [true, false],
    );
    assert.equal(rl.take("s", 2, 60, "sliding", t0 + 100_000), true);
    assert.equal(rl.take("off", 0, 60, "fixed"), true);
  });
});
