import type { Binding } from "./bindings/registry.js";
import type { ModuleRef, ScriptRecord } from "./store.js";

/** A script as both backends keep it: JSON text for the lists, ISO times as text. */
export interface ScriptRow {
  account_id: string;
  name: string;
  version_id: string;
  etag: string;
  main_module: string;
  compatibility_date: string;
  compatibility_flags: string;
  bindings: string;
  modules: string;
  created_on: string;
  modified_on: string;
}

export const toRecord = (r: ScriptRow): ScriptRecord => ({
  accountId: r.account_id,
  name: r.name,
  versionId: r.version_id,
  etag: r.etag,
  mainModule: r.main_module,
  compatibilityDate: r.compatibility_date,
  compatibilityFlags: JSON.parse(r.compatibility_flags) as string[],
  bindings: JSON.parse(r.bindings) as Binding[],
  modules: JSON.parse(r.modules) as ModuleRef[],
  createdOn: r.created_on,
  modifiedOn: r.modified_on,
});

/** The row of a version to save, with the creation time of the script's first version. */
export const toRow = (script: ScriptRecord, createdOn: string): ScriptRow => ({
  account_id: script.accountId,
  name: script.name,
  version_id: script.versionId,
  etag: script.etag,
  main_module: script.mainModule,
  compatibility_date: script.compatibilityDate,
  compatibility_flags: JSON.stringify(script.compatibilityFlags),
  bindings: JSON.stringify(script.bindings),
  modules: JSON.stringify(script.modules),
  created_on: createdOn,
  modified_on: script.modifiedOn,
});

/** The content ids the modules of these rows name (what gcContent keeps). */
export const liveModuleIds = (rows: readonly { modules: string }[]): Set<string> =>
  new Set(rows.flatMap((r) => (JSON.parse(r.modules) as ModuleRef[]).map((m) => m.contentId)));
