import assert from "node:assert/strict";
import { test } from "node:test";
import { EdgeError } from "../../core/errors.js";
import { applyMigrations, parseMigrations } from "./migrations.js";
import type { ScriptDurableObjects } from "./store.js";

const A = "a".repeat(32);
const none: ScriptDurableObjects = { namespaces: [] };
const refused = (pattern: RegExp) => (e: unknown) => e instanceof EdgeError && e.status === 400 && pattern.test(e.message);

test("wrangler's form and the inline form of migrations both parse; unknown keys and bad class names are refused naming the field", () => {
  assert.deepEqual(parseMigrations({ new_tag: "v1", steps: [{ new_sqlite_classes: ["Counter"] }] }), {
    oldTag: undefined,
    newTag: "v1",
    steps: [{ new_sqlite_classes: ["Counter"] }],
  });
  assert.deepEqual(parseMigrations({ old_tag: "v1", new_tag: "v2", deleted_classes: ["Counter"] }), {
    oldTag: "v1",
    newTag: "v2",
    steps: [{ deleted_classes: ["Counter"] }],
  });
  assert.equal(parseMigrations(undefined), undefined);
  assert.throws(() => parseMigrations({ new_tag: "v1", steps: [{ new_klasses: ["X"] }] }), refused(/^migrations\.steps\.0/));
  assert.throws(
    () => parseMigrations({ new_tag: "v1", new_classes: ["not a class"] }),
    refused(/^migrations\.new_classes\.0: must be the name of an exported class/),
  );
  assert.throws(() => parseMigrations({ new_tag: "v1", steps: "x" }), refused(/^migrations\.steps/));
});

test("new classes get a fresh id and key; a rename keeps them; a delete reports the namespace whose storage goes", () => {
  const v1 = applyMigrations(A, "s", none, { newTag: "v1", steps: [{ new_sqlite_classes: ["Counter"], new_classes: ["Notes"] }] });
  assert.equal(v1.state.migrationTag, "v1");
  const [counter, notes] = v1.state.namespaces;
  assert.deepEqual([counter.className, counter.useSqlite, notes.className, notes.useSqlite], ["Counter", true, "Notes", false]);
  assert.match(counter.id, /^[0-9a-f]{32}$/);
  assert.notEqual(counter.uniqueKey, notes.uniqueKey);

  const v2 = applyMigrations(A, "s", v1.state, {
    oldTag: "v1",
    newTag: "v2",
    steps: [{ renamed_classes: [{ from: "Counter", to: "Tally" }] }, { deleted_classes: ["Notes"] }],
  });
  assert.deepEqual(v2.state.namespaces, [{ ...counter, className: "Tally" }]);
  assert.deepEqual(v2.deleted, [notes]);
  assert.equal(v2.state.migrationTag, "v2");

  // Created and deleted by one upload: there was never any storage to delete.
  assert.deepEqual(applyMigrations(A, "s", none, { newTag: "v1", steps: [{ new_classes: ["X"] }, { deleted_classes: ["X"] }] }).deleted, []);
  // Without migrations nothing changes.
  assert.equal(applyMigrations(A, "s", v1.state, undefined).state, v1.state);
});

test("migrations that do not apply are refused: tags, existing or missing classes, transfers", () => {
  const v1 = applyMigrations(A, "s", none, { newTag: "v1", steps: [{ new_classes: ["Counter"] }] }).state;
  assert.throws(() => applyMigrations(A, "s", v1, { newTag: "v2", steps: [] }), refused(/migrations are at tag "v1", but the upload's old_tag is missing/));
  assert.throws(() => applyMigrations(A, "s", v1, { oldTag: "v0", newTag: "v2", steps: [] }), refused(/old_tag is "v0"/));
  assert.throws(() => applyMigrations(A, "s", none, { oldTag: "v0", steps: [] }), refused(/has no migrations applied yet/));
  assert.throws(
    () => applyMigrations(A, "s", v1, { oldTag: "v1", steps: [{ new_sqlite_classes: ["Counter"] }] }),
    refused(/step 0: class Counter already has/),
  );
  assert.throws(() => applyMigrations(A, "s", v1, { oldTag: "v1", steps: [{ deleted_classes: ["Nope"] }] }), refused(/cannot delete class Nope/));
  assert.throws(
    () => applyMigrations(A, "s", v1, { oldTag: "v1", steps: [{ renamed_classes: [{ from: "Nope", to: "X" }] }] }),
    refused(/cannot rename class Nope/),
  );
  assert.throws(
    () => applyMigrations(A, "s", v1, { oldTag: "v1", steps: [{ new_classes: ["B"] }, { renamed_classes: [{ from: "Counter", to: "B" }] }] }),
    refused(/step 1: class B already has/),
  );
  assert.throws(
    () => applyMigrations(A, "s", v1, { oldTag: "v1", steps: [{ transferred_classes: [{ from: "X", from_script: "o", to: "Y" }] }] }),
    refused(/transferred_classes/),
  );
});
