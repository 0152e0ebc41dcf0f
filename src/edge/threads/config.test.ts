import assert from "node:assert/strict";
import { availableParallelism } from "node:os";
import { test } from "node:test";
import { UserError } from "../../core/errors.js";
import { readEdgeLoops } from "./config.js";

test("--edge-threads: a whole number from 1 to 64 or 'auto' (one loop per CPU); above 1 refused on PostgreSQL", () => {
  assert.equal(readEdgeLoops("1", false), 1);
  assert.equal(readEdgeLoops(" 3 ", false), 3);
  assert.equal(readEdgeLoops("auto", false), availableParallelism());
  for (const bad of ["0", "65", "-1", "2.5", "two", "", "1e1", "0x2"])
    assert.throws(
      () => readEdgeLoops(bad, false),
      (err: unknown) => err instanceof UserError && /--edge-threads/.test(err.message),
      bad,
    );
  assert.equal(readEdgeLoops("1", true), 1, "one loop is what a PostgreSQL node has always had");
  assert.throws(
    () => readEdgeLoops("2", true),
    (err: unknown) => err instanceof UserError && /--database-url/.test(err.message),
  );
});
