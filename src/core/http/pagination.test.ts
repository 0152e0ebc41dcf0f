import { test } from "node:test";
import assert from "node:assert/strict";
import { pageOf, readPage } from "./pagination.js";
import { EdgeError } from "../errors.js";
import { ok, failure } from "./envelope.js";

const opts = { defaultPerPage: 20, maxPerPage: 50 };

test("readPage defaults, clamps and rejects", () => {
  assert.deepEqual(readPage({}, opts), { page: 1, perPage: 20, offset: 0 });
  assert.deepEqual(readPage({ page: "3", per_page: "10" }, opts), { page: 3, perPage: 10, offset: 20 });
  assert.equal(readPage({ per_page: "500" }, opts).perPage, 50);
  assert.throws(() => readPage({ page: "0" }, opts), EdgeError);
  assert.throws(() => readPage({ per_page: "x" }, opts), /per_page must be a positive integer/);
  for (const page of ["1.5", "-1", "0x10", " 2", "1e3", "abc"]) assert.throws(() => readPage({ page }, opts), /page must be a positive integer/, page);
});

test("a page past 2^53 - 1 is refused, and a huge page within it gives an offset every store can bind", () => {
  // 99999999999999999999 would read as 1e20, a number that names no page exactly.
  assert.throws(
    () => readPage({ page: "99999999999999999999" }, opts),
    (e: EdgeError) => e.status === 400 && /no larger than 9007199254740991/.test(e.message),
  );
  assert.throws(() => readPage({ page: "9007199254740992" }, opts), EdgeError);
  const last = readPage({ page: String(Number.MAX_SAFE_INTEGER), per_page: "50" }, opts);
  assert.equal(last.page, Number.MAX_SAFE_INTEGER);
  // (page - 1) * per_page would pass SQLite's 2^63 - 1; the offset is clamped (no list is that long).
  assert.equal(last.offset, Number.MAX_SAFE_INTEGER);
  assert.ok(
    Number.isSafeInteger(readPage({ page: String(Number.MAX_SAFE_INTEGER), per_page: "5000000" }, { defaultPerPage: 1, maxPerPage: 5_000_000 }).offset),
  );
  assert.deepEqual(pageOf([1, 2, 3], last).result, []);
  // A huge per_page is still clamped to the maximum, as the hosted API does.
  assert.equal(readPage({ per_page: "99999999999999999999" }, opts).perPage, 50);
  assert.equal(readPage({ per_page: "9".repeat(400) }, opts).perPage, 50);
});

test("pageOf gives a complete result_info, and an empty page past the end", () => {
  const items = Array.from({ length: 27 }, (_, i) => i);
  const p1 = pageOf(items, readPage({ per_page: "10" }, opts));
  assert.deepEqual(p1.result_info, { page: 1, per_page: 10, count: 10, total_count: 27, total_pages: 3 });
  const p3 = pageOf(items, readPage({ per_page: "10", page: "3" }, opts));
  assert.equal(p3.result_info.count, 7);
  const p4 = pageOf(items, readPage({ per_page: "10", page: "4" }, opts));
  assert.deepEqual(p4.result, []);
  assert.equal(p4.result_info.count, 0);
  const empty = pageOf([], readPage({}, { defaultPerPage: 100, maxPerPage: 100 }));
  assert.deepEqual(empty.result_info, { page: 1, per_page: 100, count: 0, total_count: 0, total_pages: 1 });
});

test("envelopes always carry errors and messages", () => {
  assert.deepEqual(ok([1]), { success: true, errors: [], messages: [], result: [1] });
  assert.deepEqual(failure([{ code: 1, message: "m" }]), { success: false, errors: [{ code: 1, message: "m" }], messages: [], result: null });
});
