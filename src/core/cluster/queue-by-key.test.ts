import assert from "node:assert/strict";
import { test } from "node:test";
import { QueueByKey } from "./queue-by-key.js";

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

test("work under one key runs in turn, a failure does not stop the next, other keys do not wait", async () => {
  const queue = new QueueByKey();
  const order: string[] = [];
  const slow = queue.run("zone-a", async () => {
    await pause(100);
    order.push("a1");
  });
  const failing = queue.run("zone-a", async () => {
    order.push("a2");
    throw new Error("refused");
  });
  const after = queue.run("zone-a", async () => order.push("a3"));
  const other = queue.run("zone-b", async () => order.push("b1"));
  await other;
  assert.deepEqual(order, ["b1"], "zone-b ran while zone-a's first work waited");
  await slow;
  await assert.rejects(failing, /refused/);
  await after;
  assert.deepEqual(order, ["b1", "a1", "a2", "a3"]);
  assert.equal((queue as unknown as { tails: Map<string, unknown> }).tails.size, 0, "nothing kept once the keys are idle");
});
