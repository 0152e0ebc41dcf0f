import assert from "node:assert/strict";
import { storeContract } from "../../core/testing/contract.js";
import type { PurgeLimitStore } from "./purge-limits-store.js";

const A = "a".repeat(32);
const B = "b".repeat(32);
const T0 = 1_700_000_000_000;

export const describePurgeLimitStore = storeContract<PurgeLimitStore>("PurgeLimitStore", (it) => {
  it("a new bucket starts full; takes past it are refused and take nothing; time refills it up to its size", async (store) => {
    const shape = { perSecond: 5 / 60, size: 25 };
    for (let i = 0; i < 25; i++) assert.deepEqual(await store.take(A, "requests", shape, 1, T0), { taken: true, tokens: 24 - i });
    assert.deepEqual(await store.take(A, "requests", shape, 1, T0), { taken: false, tokens: 0 });
    assert.deepEqual(await store.take(A, "requests", shape, 1, T0 + 6_000), { taken: false, tokens: 0.5 });
    assert.deepEqual(await store.take(A, "requests", shape, 1, T0 + 12_000), { taken: true, tokens: 0 });
    const later = await store.take(A, "requests", shape, 1, T0 + 3_600_000);
    assert.deepEqual(later, { taken: true, tokens: 24 }, "refilled to its size, no more");
  });

  it("a take of several tokens is whole or nothing; a bucket too small for it never takes it", async (store) => {
    const shape = { perSecond: 800, size: 800 };
    assert.deepEqual(await store.take(A, "urls", shape, 700, T0), { taken: true, tokens: 100 });
    assert.deepEqual(await store.take(A, "urls", shape, 101, T0), { taken: false, tokens: 100 });
    assert.deepEqual(await store.take(A, "urls", shape, 100, T0), { taken: true, tokens: 0 });
    assert.equal((await store.take(B, "urls", shape, 801, T0)).taken, false);
    assert.equal((await store.take(B, "urls", shape, 800, T0)).taken, true, "the refused take counted nothing");
  });

  it("accounts and kinds have their own buckets", async (store) => {
    const shape = { perSecond: 1, size: 2 };
    for (let i = 0; i < 2; i++) assert.equal((await store.take(A, "requests", shape, 1, T0)).taken, true);
    assert.equal((await store.take(A, "requests", shape, 1, T0)).taken, false);
    assert.equal((await store.take(B, "requests", shape, 1, T0)).taken, true);
    assert.equal((await store.take(A, "urls", shape, 2, T0)).taken, true);
  });

  it("a clock behind the last take (another node's) refills nothing and moves nothing back", async (store) => {
    const shape = { perSecond: 1, size: 2 };
    assert.equal((await store.take(A, "requests", shape, 2, T0 + 10_000)).taken, true);
    assert.deepEqual(await store.take(A, "requests", shape, 1, T0), { taken: false, tokens: 0 });
    assert.deepEqual(await store.take(A, "requests", shape, 1, T0 + 10_500), { taken: false, tokens: 0.5 });
    assert.deepEqual(await store.take(A, "requests", shape, 1, T0 + 11_000), { taken: true, tokens: 0 });
  });

  it("concurrent takes of one bucket never share tokens: exactly its size are taken", async (store) => {
    const shape = { perSecond: 1e-9, size: 25 };
    const answers = await Promise.all(Array.from({ length: 60 }, () => store.take(A, "requests", shape, 1, T0)));
    assert.equal(answers.filter((a) => a.taken).length, 25);
  });
});
