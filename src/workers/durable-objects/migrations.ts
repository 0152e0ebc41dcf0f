import { randomBytes } from "node:crypto";
import { z } from "zod";
import { parseWith } from "../../core/http/validate.js";
import { WorkersCodes } from "../errors.js";
import { DurableObjectsErrors } from "./errors.js";
import type { NamespaceRecord, ScriptDurableObjects } from "./store.js";

/** Class names are JavaScript identifiers (named exports of the script), at most 256 characters. */
const className = z
  .string()
  .max(256)
  .regex(/^[A-Za-z_$][A-Za-z0-9_$]*$/, { message: "must be the name of an exported class (a JavaScript identifier)" });
const classList = z.array(className).max(100).optional();

/** One migration step, as wrangler sends it (a `[[migrations]]` entry without its tag). */
const stepSchema = z.strictObject({
  new_classes: classList,
  new_sqlite_classes: classList,
  renamed_classes: z
    .array(z.strictObject({ from: className, to: className }))
    .max(100)
    .optional(),
  deleted_classes: classList,
  transferred_classes: z.array(z.unknown()).optional(),
});
export type MigrationStep = z.infer<typeof stepSchema>;

const tag = z.string().min(1).max(256);

/** The upload metadata's `migrations` as wrangler sends it: the tags and the steps after `old_tag`. */
const stepsForm = z.strictObject({ old_tag: tag.optional(), new_tag: tag.optional(), steps: z.array(stepSchema).max(100) });
/** One step given inline beside the tags (what the hosted API also takes). */
const inlineForm = stepSchema.extend({ old_tag: tag.optional(), new_tag: tag.optional() }).strict();

export interface UploadMigrations {
  oldTag?: string;
  newTag?: string;
  steps: MigrationStep[];
}

/** Reads the metadata's `migrations` (undefined when absent); a malformed one is a 400 naming the field. */
export function parseMigrations(raw: unknown): UploadMigrations | undefined {
  if (raw === undefined || raw === null) return undefined;
  if (typeof raw === "object" && "steps" in raw) {
    const m = parseWith(z.object({ migrations: stepsForm }), { migrations: raw }, WorkersCodes.validation).migrations;
    return { oldTag: m.old_tag, newTag: m.new_tag, steps: m.steps };
  }
  const { old_tag, new_tag, ...step } = parseWith(z.object({ migrations: inlineForm }), { migrations: raw }, WorkersCodes.validation).migrations;
  return { oldTag: old_tag, newTag: new_tag, steps: [step] };
}

/** At most this many classes per Worker. */
export const NAMESPACES_PER_SCRIPT = 100;

/** The result of applying an upload's migrations to what a script has. */
export interface MigrationOutcome {
  state: ScriptDurableObjects;
  /** Namespaces deleted by the migrations: their storage goes once the new version runs. */
  deleted: NamespaceRecord[];
}

const newHex = (bytes: number) => randomBytes(bytes).toString("hex");

/**
 * Applies `migrations` (if any) to `current`, step by step as the hosted platform does: the upload's `old_tag` must
 * be the script's tag (absent when it has none); `new_classes` / `new_sqlite_classes` create a namespace (a new id
 * and key), `renamed_classes` keep the namespace (and its objects) under the new name, `deleted_classes` remove it.
 * Nothing is stored here: the caller commits the outcome once the new version runs.
 */
export function applyMigrations(accountId: string, script: string, current: ScriptDurableObjects, migrations: UploadMigrations | undefined): MigrationOutcome {
  if (!migrations) return { state: current, deleted: [] };
  if (migrations.oldTag !== current.migrationTag) throw DurableObjectsErrors.tagMismatch(current.migrationTag, migrations.oldTag);
  const byClass = new Map(current.namespaces.map((n) => [n.className, n]));
  const deleted: NamespaceRecord[] = [];
  const now = new Date().toISOString();
  migrations.steps.forEach((step, i) => {
    if (step.transferred_classes?.length) throw DurableObjectsErrors.transferNotSupported(i);
    const create = (name: string, useSqlite: boolean) => {
      if (byClass.has(name)) throw DurableObjectsErrors.classExists(i, name);
      byClass.set(name, { id: newHex(16), accountId, script, className: name, useSqlite, uniqueKey: newHex(32), createdOn: now });
    };
    for (const name of step.new_classes ?? []) create(name, false);
    for (const name of step.new_sqlite_classes ?? []) create(name, true);
    const renames = (step.renamed_classes ?? []).map(({ from, to }) => {
      const ns = byClass.get(from);
      if (!ns) throw DurableObjectsErrors.classMissing(i, from, "rename");
      byClass.delete(from);
      return { ns, to };
    });
    for (const { ns, to } of renames) {
      if (byClass.has(to)) throw DurableObjectsErrors.classExists(i, to);
      byClass.set(to, { ...ns, className: to });
    }
    for (const name of step.deleted_classes ?? []) {
      const ns = byClass.get(name);
      if (!ns) throw DurableObjectsErrors.classMissing(i, name, "delete");
      byClass.delete(name);
      deleted.push(ns);
    }
  });
  if (byClass.size > NAMESPACES_PER_SCRIPT) throw DurableObjectsErrors.tooManyNamespaces(NAMESPACES_PER_SCRIPT);
  const namespaces = [...byClass.values()].sort((a, b) => (a.className < b.className ? -1 : 1));
  // A class created and deleted by the same upload never had storage; one deleted and re-created is a new namespace.
  const kept = new Set(namespaces.map((n) => n.id));
  return {
    state: { migrationTag: migrations.newTag ?? current.migrationTag, namespaces },
    deleted: deleted.filter((n) => !kept.has(n.id) && current.namespaces.some((c) => c.id === n.id)),
  };
}
