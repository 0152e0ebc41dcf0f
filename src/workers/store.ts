import type { Binding } from "./bindings/registry.js";

/** How workerd is told to load a module part (derived from the part's content type). */
export type ModuleKind = "esModule" | "commonJsModule" | "text" | "data" | "wasm" | "json";

/** A module as a script record names it: its bytes live in the content store under `contentId`. */
export interface ModuleRef {
  name: string;
  kind: ModuleKind;
  contentId: string;
  size: number;
}

/** A module with its bytes. */
export interface ModuleSource {
  name: string;
  kind: ModuleKind;
  content: Buffer;
}

export interface ScriptRecord {
  accountId: string;
  name: string;
  /** Changes on every upload and every secret change; reported as the deployment / version id. */
  versionId: string;
  /** The hash of the modules' names and bytes. */
  etag: string;
  mainModule: string;
  compatibilityDate: string;
  compatibilityFlags: string[];
  /** The bindings, secrets apart (a secret's value is never part of a record). */
  bindings: Binding[];
  modules: ModuleRef[];
  createdOn: string;
  modifiedOn: string;
}

/** One cron trigger of a script, as the schedules API shows it. */
export interface Schedule {
  cron: string;
  createdOn: string;
  modifiedOn: string;
}

/** A cron trigger with the script it belongs to, as the platform's clock needs it. */
export interface ScriptSchedule {
  accountId: string;
  script: string;
  cron: string;
}

/**
 * Worker scripts, their modules, their secrets and their cron triggers. Every backend keeps these promises (store.contract.ts):
 *
 * - A script name is unique on the platform (the Host `<script>.<workers domain>` names no account): saving a
 *   name another account holds is refused with `WorkersErrors.nameTaken`.
 * - Module bytes are written (`writeModule`) before the record that names them is saved; saving a new version
 *   or deleting a script removes the bytes it no longer names, after the change is committed.
 * - Secret values must be readable again (workerd needs them in clear), so they are sealed with the platform's
 *   secrets key (`SecretBox`), bound to their row (`secretSealContext`), never stored in clear and never
 *   returned by a method that feeds an API answer (`secretNames`). A store opened with another key refuses to open.
 * - Deleting a script deletes its secrets and its cron triggers; uploading a new version keeps its triggers.
 * - A tick of a cron trigger is claimed once (`claimTick`): the first claim of a tick wins, any later claim of it or
 *   of an earlier tick loses, so a platform restarted within a tick does not run it twice.
 */
export interface WorkersStore {
  get(accountId: string, name: string): Promise<ScriptRecord | undefined>;
  /** The script a Host name points at, whichever account owns it. */
  byName(name: string): Promise<ScriptRecord | undefined>;
  /** An account's scripts, by name. */
  list(accountId: string): Promise<ScriptRecord[]>;
  /** Every script of the platform (to start them all). */
  all(): Promise<ScriptRecord[]>;

  writeModule(content: Buffer): Promise<{ contentId: string; size: number }>;
  readModules(modules: readonly ModuleRef[]): Promise<ModuleSource[]>;
  /** Removes module bytes no saved record names (an upload that did not start). */
  deleteModules(modules: readonly ModuleRef[]): Promise<void>;
  /** Removes module bytes no record names, older than `graceMs` (left by a crash between writing and saving). */
  gcContent(graceMs?: number): Promise<number>;

  /** Saves a version (keeping the first version's `createdOn`) with the secrets given; other secrets are kept. */
  save(script: ScriptRecord, secrets: readonly { name: string; text: string }[]): Promise<void>;
  /** Removes a script and its secrets; false when there was none. */
  delete(accountId: string, name: string): Promise<boolean>;

  secretNames(accountId: string, script: string): Promise<string[]>;
  /** Secret values, for the runtime only (never for an API answer). */
  secretValues(accountId: string, script: string): Promise<Map<string, string>>;
  /** Sets (`value`) or removes (undefined) one secret and gives the script `versionId`, at once; false when nothing changed. Refused with `scriptNotFound` when there is no such script. */
  changeSecret(accountId: string, script: string, name: string, value: string | undefined, versionId: string): Promise<boolean>;

  /** A script's cron triggers, oldest first. Refused with `scriptNotFound` when there is no such script. */
  schedules(accountId: string, script: string): Promise<Schedule[]>;
  /**
   * Replaces a script's cron triggers with `crons` (distinct, valid: the caller checks), keeping `createdOn` and the
   * last claimed tick of those it had already. Refused with `scriptNotFound` when there is no such script, and with
   * `tooManySchedules` when the account would hold more than `accountLimit` triggers; nothing changes then.
   */
  setSchedules(accountId: string, script: string, crons: readonly string[], accountLimit: number): Promise<Schedule[]>;
  /** Every cron trigger of the platform. */
  allSchedules(): Promise<ScriptSchedule[]>;
  /** Claims the tick at `tick` (ms since the epoch) of one trigger: true for the first claim of it, false otherwise. */
  claimTick(schedule: ScriptSchedule, tick: number): Promise<boolean>;
}

/** What a sealed secret value is bound to: its row, so that a value copied to another script or name does not open. */
export const secretSealContext = (accountId: string, script: string, name: string) => `${accountId}/${script}/${name}`;
