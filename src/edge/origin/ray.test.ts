import assert from "node:assert/strict";
import { test } from "node:test";
import { newRay } from "./forwarder.js";

test("rays are 16 hex digits and the platform's tag, never repeated across the batches they are drawn in", () => {
  // 512 rays a batch: three batches and a part of a fourth.
  const rays = Array.from({ length: 1_700 }, () => newRay());
  for (const ray of rays) assert.match(ray, /^[0-9a-f]{16}-EDGE$/);
  assert.equal(new Set(rays).size, rays.length);
  // Each its own string, not a view of the batch: holding one keeps 21 bytes, and no two share a value.
  assert.equal(new Set(rays.map((r) => r.slice(0, 16))).size, rays.length);
});
