import assert from "node:assert/strict";
import { test } from "node:test";
import { FairOrderQueue } from "./manager.js";

test("certificate orders are taken round robin by account, each account's in its own order, each hostname once (issue 30, hole 7)", () => {
  const q = new FairOrderQueue();
  // B queues 200 domains before A's one: with one FIFO, A's order came 201st.
  for (let i = 0; i < 200; i++) q.push("B", `b${i}.example`);
  q.push("A", "shop.a.example");
  q.push("B", "b0.example"); // already waiting: not queued twice
  assert.equal(q.size, 201);
  assert.equal(q.has("shop.a.example"), true);
  assert.deepEqual([q.shift(), q.shift(), q.shift()], ["b0.example", "shop.a.example", "b1.example"]);
  assert.equal(q.has("shop.a.example"), false);
  // A third account joins last in the turn and is served within one round.
  q.push("C", "c0.example");
  q.push("A", "again.a.example");
  assert.deepEqual([q.shift(), q.shift(), q.shift(), q.shift()], ["b2.example", "c0.example", "again.a.example", "b3.example"]);
  let n = 0;
  while (q.shift() !== undefined) n++;
  assert.equal(n, 196);
  assert.equal(q.size, 0);
});
