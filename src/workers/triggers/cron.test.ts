import assert from "node:assert/strict";
import { test } from "node:test";
import { cronProblem, nextTick } from "./cron.js";

const at = (iso: string) => new Date(iso);
const next = (cron: string, after: string) => nextTick(cron, at(after))?.toISOString();

test("the next tick is the first one strictly after the given time, in UTC", () => {
  assert.equal(next("* * * * *", "2026-01-01T00:00:00.000Z"), "2026-01-01T00:01:00.000Z", "a tick exactly now is not the next one");
  assert.equal(next("* * * * *", "2026-01-01T00:00:59.999Z"), "2026-01-01T00:01:00.000Z");
  assert.equal(next("*/15 * * * *", "2026-01-01T10:16:00.000Z"), "2026-01-01T10:30:00.000Z");
  assert.equal(next("0 15 1 * *", "2026-01-01T15:00:00.000Z"), "2026-02-01T15:00:00.000Z");
  assert.equal(next("10 7 * * mon-fri", "2026-11-27T08:00:00.000Z"), "2026-11-30T07:10:00.000Z", "Friday after 7:10 → Monday");
  assert.equal(next("59 23 L * *", "2026-02-01T00:00:00.000Z"), "2026-02-28T23:59:00.000Z", "L: the last day of the month");
  assert.equal(next("0 0 29 2 *", "2026-03-01T00:00:00.000Z"), "2028-02-29T00:00:00.000Z", "a leap day waits for a leap year");
  assert.equal(next("0 12 * jan,jul *", "2026-02-01T00:00:00.000Z"), "2026-07-01T12:00:00.000Z");
});

test("invalid expressions are refused with the reason", () => {
  assert.equal(cronProblem("*/5 * * * *"), undefined);
  assert.equal(cronProblem("59 23 LW * *"), undefined);
  assert.match(cronProblem("61 * * * *")!, /minute/);
  assert.match(cronProblem("* * * *")!, /five fields/);
  assert.match(cronProblem("0 * * * * *")!, /five fields/, "no seconds field");
  assert.match(cronProblem("@hourly")!, /five fields/);
  assert.match(cronProblem("")!, /five fields/);
  assert.match(cronProblem("0 0 31 2 *")!, /never fires/);
  assert.match(cronProblem(`* * * * ${"1,".repeat(60)}1`)!, /longer than 100/);
  assert.ok(cronProblem("a b c d e"));
});
