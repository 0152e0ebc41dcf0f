import assert from "node:assert/strict";
import { test } from "node:test";
import { versionKeyPoint } from "./version-key.js";

const of = (value: string | string[]) => versionKeyPoint({ "cloudflare-workers-version-key": value });

test("Cloudflare-Workers-Version-Key: a point in [0, 100) that only the key decides, the same in every process", () => {
  // Pinned: every node of a cluster, and every release of the platform during a rolling upgrade, must put a key at the
  // same point, or a user's session would change versions with the node that serves it.
  assert.equal(of("foo"), 17.246558782880683);
  assert.equal(of("user-1"), 77.64059241441004);
  assert.equal(of("foo"), of("foo"));
  assert.notEqual(of("foo"), of("Foo"), "keys are compared byte for byte");
  assert.equal(of(["a", "b"]), of("a, b"), "repeated fields count as one key, as Node joins them");
  assert.equal(versionKeyPoint({}), undefined);
  assert.equal(versionKeyPoint(undefined), undefined);
  assert.equal(of(""), undefined, "an empty key is no key: the request goes by the shares");
  // Bytes that are not UTF-8 text (Node hands them over as latin1) and a key as large as a request head can carry.
  for (const odd of ['"; , = \\', "\u00ff\u00e9\u0080", "k".repeat(32 * 1024)]) {
    const point = of(odd)!;
    assert.ok(point >= 0 && point < 100, `${odd.slice(0, 10)}: ${point}`);
    assert.equal(of(odd), point);
  }
});

test("Cloudflare-Workers-Version-Key: keys spread evenly over the shares", () => {
  const n = 10_000;
  const below = (share: number) => Array.from({ length: n }, (_, i) => of(`session-${i}`)!).filter((p) => p < share).length / n;
  // A deterministic set of keys: these fractions are fixed, and within two points of the shares.
  for (const share of [1, 10, 50, 90]) assert.ok(Math.abs(below(share) * 100 - share) < 2, `${share}%: ${below(share) * 100}%`);
});
