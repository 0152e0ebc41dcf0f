import assert from "node:assert/strict";
import { test } from "node:test";
import { MAX_JSON_DEPTH, nestsDeeperThan, parseUserJson } from "./json-input.js";

const nested = (depth: number, open = "[", close = "]") => open.repeat(depth) + close.repeat(depth);

test("nesting is counted through arrays and objects, up to the limit and not one past it", () => {
  assert.equal(nestsDeeperThan(nested(MAX_JSON_DEPTH)), false);
  assert.equal(nestsDeeperThan(nested(MAX_JSON_DEPTH + 1)), true);
  let mixed = "1";
  for (let i = 0; i < MAX_JSON_DEPTH + 1; i++) mixed = i % 2 ? `{"k":${mixed}}` : `[${mixed}]`;
  assert.equal(nestsDeeperThan(mixed), true);
  assert.equal(nestsDeeperThan(mixed, MAX_JSON_DEPTH + 1), false);
  // Siblings do not add up: a thousand flat objects side by side are two levels.
  assert.equal(nestsDeeperThan(JSON.stringify(Array.from({ length: 1000 }, () => ({ a: [1] })))), false);
});

test("brackets inside strings, escaped quotes and backslashes do not count", () => {
  const tricky = JSON.stringify({ a: "[".repeat(500), b: 'quote \\" then [[[', c: "\\\\", d: '\\\\\\"[[[[' });
  assert.equal(nestsDeeperThan(tricky, 1), false);
  // An escaped quote does not end the string: the brackets after it are still inside it.
  assert.equal(nestsDeeperThan(`["\\"${"[".repeat(100)}"]`, 1), false);
  // Two backslashes are one escaped backslash: the quote after them does end the string.
  assert.equal(nestsDeeperThan(`["\\\\", ${nested(5)}]`, 5), true);
  // Multi-byte UTF-8 never looks like a quote or a bracket.
  assert.equal(nestsDeeperThan(Buffer.from(JSON.stringify(["€„“〔〕［］", { ключ: ["値"] }])), 3), false);
});

test("the check is linear: five million levels and a long run of escapes are answered at once", () => {
  // These would take seconds if the scan were quadratic or parsed first; they are hang guards, not timings.
  assert.equal(nestsDeeperThan(Buffer.from(nested(5_000_000))), true);
  const escapes = Buffer.from(`"${"\\\\".repeat(2_000_000)}${'\\"'.repeat(1_000_000)}"`);
  assert.equal(nestsDeeperThan(escapes), false);
});

test("parseUserJson parses what JSON.parse does and refuses deep nesting with a SyntaxError", () => {
  assert.deepEqual(parseUserJson('{"a":[1,{"b":null}]}'), { a: [1, { b: null }] });
  assert.deepEqual(parseUserJson(Buffer.from('"x"')), "x");
  assert.throws(() => parseUserJson("{bad"), SyntaxError);
  assert.throws(
    () => parseUserJson(nested(8000)),
    (e: Error) => e instanceof SyntaxError && /deeper than 64 levels/.test(e.message),
  );
  assert.throws(() => parseUserJson(nested(4), 3), /deeper than 3 levels/);
});
