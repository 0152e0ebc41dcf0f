import { test } from "node:test";
import assert from "node:assert/strict";
import { pageOf, readPage } from "./pagination.js";
import { ApiError } from "../errors.js";
import { ok, failure } from "./envelope.js";

const opts = { defaultPerPage: 20, maxPerPage: 50 };

test("readPage defaults, clamps and rejects", () => {
  assert.deepEqual(readPage({}, opts), { page: 1, perPage: 20, offset: 0 });
  assert.deepEqual(readPage({ page: "3", per_page: "10" }, opts), { page: 3, perPage: 10, offset: 20 });
  assert.equal(readPage({ per_page: "500" }, opts).perPage, 50);
  assert.throws(() => readPage({ page: "0" }, opts), ApiError);
  assert.throws(() => readPage({ per_page: "x" }, opts), /per_page must be a positive integer/);
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
