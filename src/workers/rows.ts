import { createHash, randomUUID } from "node:crypto";
import type { Binding } from "./bindings/registry.js";
import { WorkersErrors } from "./errors.js";
import { primaryOf, type DeploymentRecord, type ModuleRef, type ScriptRecord, type VersionMeta, type VersionRecord, type VersionTrigger } from "./store.js";

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

/** A kept version as both backends keep it; `secrets` is JSON name -> digest of the sealed value (secretStamps). */
export interface VersionRow {
  account_id: string;
  script: string;
  id: string;
  number: number;
  etag: string;
  main_module: string;
  compatibility_date: string;
  compatibility_flags: string;
  bindings: string;
  modules: string;
  secrets: string;
  triggered_by: string;
  message: string | null;
  tag: string | null;
  source: string;
  author: string | null;
  created_on: string;
}

export const VERSION_COLUMNS =
  "account_id, script, id, number, etag, main_module, compatibility_date, compatibility_flags, bindings, modules, secrets, triggered_by, message, tag, source, author, created_on";

export const toVersion = (r: VersionRow): VersionRecord => ({
  accountId: r.account_id,
  script: r.script,
  id: r.id,
  number: Number(r.number),
  etag: r.etag,
  mainModule: r.main_module,
  compatibilityDate: r.compatibility_date,
  compatibilityFlags: JSON.parse(r.compatibility_flags) as string[],
  bindings: JSON.parse(r.bindings) as Binding[],
  modules: JSON.parse(r.modules) as ModuleRef[],
  secretNames: Object.keys(JSON.parse(r.secrets) as Record<string, string>).sort(),
  triggeredBy: r.triggered_by as VersionTrigger,
  ...(r.message !== null && { message: r.message }),
  ...(r.tag !== null && { tag: r.tag }),
  source: r.source,
  ...(r.author !== null && { author: r.author }),
  createdOn: r.created_on,
});

/** The row of a new version of `script` (its content), numbered `number`, made with secrets `stamps`. */
export const versionRow = (script: ScriptRecord, number: number, stamps: Map<string, string>, meta: VersionMeta, createdOn: string): VersionRow => ({
  account_id: script.accountId,
  script: script.name,
  id: script.versionId,
  number,
  etag: script.etag,
  main_module: script.mainModule,
  compatibility_date: script.compatibilityDate,
  compatibility_flags: JSON.stringify(script.compatibilityFlags),
  bindings: JSON.stringify(script.bindings),
  modules: JSON.stringify(script.modules),
  secrets: JSON.stringify(Object.fromEntries(stamps)),
  triggered_by: meta.triggeredBy,
  message: meta.message ?? null,
  tag: meta.tag ?? null,
  source: meta.source,
  author: meta.author ?? null,
  created_on: createdOn,
});

/** The script record a kept version makes when it goes live (the script keeps its first `createdOn`). */
export const liveRowOf = (v: VersionRow, createdOn: string, modifiedOn: string): ScriptRow => ({
  account_id: v.account_id,
  name: v.script,
  version_id: v.id,
  etag: v.etag,
  main_module: v.main_module,
  compatibility_date: v.compatibility_date,
  compatibility_flags: v.compatibility_flags,
  bindings: v.bindings,
  modules: v.modules,
  created_on: createdOn,
  modified_on: modifiedOn,
});

export interface DeploymentRow {
  account_id: string;
  script: string;
  id: string;
  seq: number;
  versions: string;
  triggered_by: string | null;
  message: string | null;
  source: string;
  author: string | null;
  created_on: string;
}

export const DEPLOYMENT_COLUMNS = "account_id, script, id, seq, versions, triggered_by, message, source, author, created_on";

export const toDeployment = (r: DeploymentRow): DeploymentRecord => ({
  id: r.id,
  createdOn: r.created_on,
  source: r.source,
  ...(r.author !== null && { author: r.author }),
  ...(r.message !== null && { message: r.message }),
  ...(r.triggered_by !== null && { triggeredBy: r.triggered_by as VersionTrigger }),
  versions: (JSON.parse(r.versions) as { version_id: string; percentage: number }[]).map((v) => ({ versionId: v.version_id, percentage: v.percentage })),
});

export const deploymentRow = (accountId: string, script: string, seq: number, d: DeploymentRecord): DeploymentRow => ({
  account_id: accountId,
  script,
  id: d.id,
  seq,
  versions: JSON.stringify(d.versions.map((v) => ({ version_id: v.versionId, percentage: v.percentage }))),
  triggered_by: d.triggeredBy ?? null,
  message: d.message ?? null,
  source: d.source,
  author: d.author ?? null,
  created_on: d.createdOn,
});

/** A deployment of one version at 100%, as a save or a secret change records it. */
export const deploymentOf = (versionId: string, createdOn: string, meta: VersionMeta): DeploymentRecord => ({
  id: randomUUID(),
  createdOn,
  source: meta.source,
  ...(meta.author !== undefined && { author: meta.author }),
  ...(meta.message !== undefined && { message: meta.message }),
  triggeredBy: meta.triggeredBy,
  versions: [{ versionId, percentage: 100 }],
});

/**
 * What tells a script's secrets apart over time without keeping their values: name -> digest of the sealed value.
 * Sealing uses a fresh nonce, so setting a secret again (even to the same text) changes its digest.
 */
export const secretStamps = (rows: readonly { name: string; value: string }[]): Map<string, string> =>
  new Map(rows.map((r) => [r.name, createHash("sha256").update(r.value).digest("hex").slice(0, 32)]));

/** The secrets added, removed or set again since a version was made (`then`: its `secrets` column), by name. */
export function changedSecrets(then: string, now: Map<string, string>): string[] {
  const old = new Map(Object.entries(JSON.parse(then) as Record<string, string>));
  const names = new Set([...old.keys(), ...now.keys()]);
  return [...names].filter((n) => old.get(n) !== now.get(n)).sort();
}

/**
 * Which of a script's versions (newest first) go so that `keep` stay: the oldest, never one in `liveIds` (the live one
 * and those the current deployment names; they count among those kept).
 */
export function versionsToPrune<T extends { id: string }>(newestFirst: readonly T[], liveIds: ReadonlySet<string>, keep: number): T[] {
  const others = newestFirst.filter((v) => !liveIds.has(v.id));
  return others.slice(Math.max(0, keep - (newestFirst.length - others.length)));
}

/** The versions pruning must keep: the live one, and every version the newest deployment (the current one) names. */
export const liveVersionIds = (liveId: string, newest: DeploymentRow | undefined): Set<string> =>
  new Set([liveId, ...(newest ? toDeployment(newest).versions.map((v) => v.versionId) : [])]);

/**
 * The live row a deployment makes (its primary version's content; the script keeps its first `createdOn`), given the
 * rows of the versions it names (undefined where there is no such version). Refused with `versionNotFound`, and with
 * `secretsChanged` (unless `force`) when the script's secrets (`stamps`) changed since any of them was made.
 */
export function deployedRow(
  deployment: DeploymentRecord,
  rows: ReadonlyMap<string, VersionRow | undefined>,
  stamps: Map<string, string>,
  createdOn: string,
  force: boolean,
): ScriptRow {
  const changed = new Set<string>();
  for (const { versionId } of deployment.versions) {
    const v = rows.get(versionId);
    if (!v) throw WorkersErrors.versionNotFound(versionId);
    for (const name of changedSecrets(v.secrets, stamps)) changed.add(name);
  }
  if (!force && changed.size > 0) throw WorkersErrors.secretsChanged([...changed].sort());
  return liveRowOf(rows.get(primaryOf(deployment).versionId)!, createdOn, deployment.createdOn);
}

/** The module refs of `gone` that none of `kept` names (what may be deleted once the change committed). */
export function unnamedModules(gone: readonly { modules: string }[], kept: readonly { modules: string }[]): ModuleRef[] {
  const keptIds = liveModuleIds(kept);
  const seen = new Set<string>();
  return gone.flatMap((r) => JSON.parse(r.modules) as ModuleRef[]).filter((m) => !keptIds.has(m.contentId) && !seen.has(m.contentId) && seen.add(m.contentId));
}
