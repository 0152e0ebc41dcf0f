import assert from "node:assert/strict";
import { storeContract } from "../../core/testing/contract.js";
import type { DurableObjectsStore, NamespaceRecord } from "./store.js";

const A = "a".repeat(32);
const B = "b".repeat(32);

const ns = (accountId: string, script: string, className: string, n: number, useSqlite = false): NamespaceRecord => ({
  id: n.toString(16).padStart(32, "0"),
  accountId,
  script,
  className,
  useSqlite,
  uniqueKey: `key-${n}`,
  createdOn: "2026-01-01T00:00:00.000Z",
});

export const describeDurableObjectsStore = storeContract<DurableObjectsStore>("DurableObjectsStore", (it) => {
  it("replace saves a script's namespaces and tag; ofScript and list read them back by class", async (store) => {
    assert.deepEqual(await store.ofScript(A, "s"), { migrationTag: undefined, namespaces: [] });
    const counter = ns(A, "s", "Counter", 1, true);
    const room = ns(A, "s", "Room", 2);
    await store.replace(A, "s", { migrationTag: "v1", namespaces: [room, counter] });
    assert.deepEqual(await store.ofScript(A, "s"), { migrationTag: "v1", namespaces: [counter, room] });
    assert.deepEqual(await store.list(A), [counter, room]);
    assert.deepEqual(await store.get(A, counter.id), counter);
  });

  it("an account never sees another account's namespaces", async (store) => {
    const mine = ns(A, "s", "Counter", 1);
    await store.replace(A, "s", { migrationTag: "v1", namespaces: [mine] });
    assert.deepEqual(await store.list(B), []);
    assert.equal(await store.get(B, mine.id), undefined);
    assert.deepEqual(await store.ofScript(B, "s"), { migrationTag: undefined, namespaces: [] });
  });

  it("a replace keeps the key of a renamed namespace, removes the dropped ones, and may swap two names", async (store) => {
    const a = ns(A, "s", "A", 1);
    const b = ns(A, "s", "B", 2);
    const c = ns(A, "s", "C", 3);
    await store.replace(A, "s", { migrationTag: "v1", namespaces: [a, b, c] });
    const swapped = [
      { ...a, className: "B" },
      { ...b, className: "A" },
    ];
    await store.replace(A, "s", { migrationTag: "v2", namespaces: swapped });
    const after = await store.ofScript(A, "s");
    assert.equal(after.migrationTag, "v2");
    assert.deepEqual(
      after.namespaces.map((n) => [n.className, n.uniqueKey]),
      [
        ["A", "key-2"],
        ["B", "key-1"],
      ],
    );
  });

  it("deleteScript removes the script's namespaces and tag and returns them; other scripts keep theirs", async (store) => {
    const mine = ns(A, "s", "Counter", 1);
    const other = ns(A, "t", "Counter", 2);
    await store.replace(A, "s", { migrationTag: "v1", namespaces: [mine] });
    await store.replace(A, "t", { migrationTag: "x", namespaces: [other] });
    assert.deepEqual(await store.deleteScript(A, "s"), [mine]);
    assert.deepEqual(await store.ofScript(A, "s"), { migrationTag: undefined, namespaces: [] });
    assert.deepEqual(await store.list(A), [other]);
  });
});
