import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { decodeTime } from "ulid";
import { newLogId } from "./log-id.js";

describe("AI gateway log ids", () => {
  it("are ULIDs of their millisecond that sort in the order they were made, within a millisecond and when the clock steps back", () => {
    const t = Date.UTC(2026, 10, 24, 10, 0, 0);
    const ids = [newLogId(t), ...Array.from({ length: 5000 }, () => newLogId(t)), newLogId(t - 5), newLogId(t + 1), newLogId(t + 1)];
    for (const id of ids) assert.match(id, /^[0-9A-HJKMNP-TV-Z]{26}$/);
    assert.equal(decodeTime(ids[0]), t);
    assert.equal(decodeTime(ids.at(-1)!), t + 1);
    assert.equal(decodeTime(ids.at(-3)!), t, "a clock that steps back keeps the last millisecond");
    for (let i = 1; i < ids.length; i++) assert.ok(ids[i - 1] < ids[i], `${ids[i - 1]} < ${ids[i]}`);
    assert.equal(new Set(ids.map((id) => id.slice(10, 18))).size, 2, "a new millisecond draws new randomness");
  });
});
