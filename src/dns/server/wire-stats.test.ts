import assert from "node:assert/strict";
import { test } from "node:test";
import * as packet from "dns-packet";
import { AnswerCounts, CountDeltas, TYPE_CELLS, totalsOf, typeCell } from "./wire-stats.js";

const query = (type: string, name = "www.example.com") =>
  packet.encode({ type: "query", id: 1, questions: [{ type: type as packet.RecordType, name, class: "IN" }] });

test("a query's type cell comes from its wire bytes; types past the cells and unreadable questions share the last", () => {
  assert.equal(typeCell(query("A")), 1);
  assert.equal(typeCell(query("AAAA")), 28);
  assert.equal(typeCell(query("CAA")), 257);
  assert.equal(typeCell(query("TA")), TYPE_CELLS - 1, "32768 has no cell of its own");
  assert.equal(typeCell(query("A").subarray(0, 14)), TYPE_CELLS - 1, "a truncated question");
  assert.equal(typeCell(Buffer.alloc(12)), TYPE_CELLS - 1, "no question at all");
});

test("counts go from an answering process to the main process as growth since the last report", () => {
  const counts = new AnswerCounts();
  const answer = Buffer.from(query("A"));
  answer[3] = 3; // NXDOMAIN
  counts.count(query("A"), answer);
  counts.count(query("A"), answer);
  const deltas = new CountDeltas();
  const first = deltas.fromTotals(totalsOf(counts));
  assert.deepEqual(first, [1 * 16 + 3, 2]);
  assert.deepEqual(deltas.fromTotals(totalsOf(counts)), [], "nothing new");
  counts.count(query("A"), answer);
  const main = new AnswerCounts();
  main.addPairs(first);
  main.addPairs(deltas.fromTotals(totalsOf(counts)));
  main.addPairs([-1, 5, 1e9, 5, 17, -3]);
  assert.equal(main.cells[1 * 16 + 3], 3);
  assert.equal(totalsOf(main).length, 2, "bad cells and negative counts are ignored");
});
