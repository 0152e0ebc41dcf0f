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

/** How many versions of a Worker are kept (the hosted rollback limit), and how many of its deployments. */
export const VersionLimits = { versions: 100, deployments: 10 } as const;

/** Why a version was made (the hosted `workers/triggered_by` annotation): an upload, or a secret change. */
export type VersionTrigger = "upload" | "secret";

/** Who made a version or a deployment, and how. */
export interface ChangeAuthor {
  /** `wrangler` when wrangler made the call, `api` otherwise (the hosted `source`). */
  source: string;
  /** The caller's email (`author_email`); absent for changes the platform made itself. */
  author?: string;
}

/** What a new version is told apart by, beside its content. */
export interface VersionMeta extends ChangeAuthor {
  triggeredBy: VersionTrigger;
  /** `workers/message` and `workers/tag` of the upload's annotations. */
  message?: string;
  tag?: string;
}

/**
 * One kept version of a Worker: its own modules, bindings (secrets apart) and compatibility settings. Its secrets
 * are the script's (their values are not kept per version): `secretNames` are those it was made with.
 */
export interface VersionRecord extends VersionMeta {
  accountId: string;
  script: string;
  id: string;
  /** 1 for the first version of the Worker, one more for each later one. */
  number: number;
  etag: string;
  mainModule: string;
  compatibilityDate: string;
  compatibilityFlags: string[];
  bindings: Binding[];
  modules: ModuleRef[];
  secretNames: string[];
  createdOn: string;
}

/**
 * One deployment of a Worker: which versions take its traffic, and in which shares (percentages adding up to 100). One
 * version at 100%, or two (a gradual deployment), each request served by one of them chosen by its share.
 */
export interface DeploymentRecord extends ChangeAuthor {
  id: string;
  createdOn: string;
  message?: string;
  triggeredBy?: VersionTrigger;
  versions: { versionId: string; percentage: number }[];
}

/** How many versions one deployment may name (the hosted limit). */
export const MAX_DEPLOYMENT_VERSIONS = 2;

/**
 * The version of a deployment the script record takes (what settings, the script's content and its bindings show): the
 * one with the largest share, the first named on a tie.
 */
export const primaryOf = (d: Pick<DeploymentRecord, "versions">) => d.versions.reduce((a, b) => (b.percentage > a.percentage ? b : a));

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
 * - Every version saved is kept (`versions`), up to `VersionLimits.versions` per script: the oldest beyond that are
 *   removed with the module bytes no kept version names, never the live one nor one the current deployment names. Saving a version (`save`) or changing a
 *   secret deploys it: a deployment naming it at 100% is recorded (`deployments`, newest first, the latest
 *   `VersionLimits.deployments` kept; a deployment naming a removed version is removed with it). `addVersion` keeps a
 *   version without deploying it; `deploy` makes one or two kept versions live (the script record takes the content of
 *   the deployment's `primaryOf`). The newest deployment is always the one that runs.
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

  /**
   * Saves a version and makes it live (keeping the first version's `createdOn`) with the secrets given; other secrets
   * are kept. The version is kept and a deployment of it recorded (`meta` says who and why; an upload by default).
   */
  save(script: ScriptRecord, secrets: readonly { name: string; text: string }[], meta?: VersionMeta): Promise<void>;
  /** Keeps a version of an existing script without deploying it. Refused with `scriptNotFound` when there is no such script. */
  addVersion(script: ScriptRecord, meta: VersionMeta): Promise<VersionRecord>;
  /**
   * Makes the kept versions `deployment.versions` live (the script record takes the content of its `primaryOf`) and
   * records the deployment. Refused with `scriptNotFound` or `versionNotFound`; with `secretsChanged` (nothing written)
   * when the script's secrets changed since one of those versions was made, unless `force`.
   */
  deploy(accountId: string, script: string, deployment: DeploymentRecord, force: boolean): Promise<ScriptRecord>;
  /** The secrets added, removed or set again since kept version `versionId` was made, by name. Refused with `versionNotFound`. */
  secretsChangedSince(accountId: string, script: string, versionId: string): Promise<string[]>;
  /** A script's kept versions, newest first, `perPage` from page `page` (from 1), with how many there are. */
  versions(accountId: string, script: string, page: number, perPage: number): Promise<{ items: VersionRecord[]; total: number }>;
  version(accountId: string, script: string, id: string): Promise<VersionRecord | undefined>;
  /** A script's kept deployments, newest first. */
  deployments(accountId: string, script: string): Promise<DeploymentRecord[]>;
  /** Removes a script and its secrets; false when there was none. */
  delete(accountId: string, name: string): Promise<boolean>;

  secretNames(accountId: string, script: string): Promise<string[]>;
  /** A script's tags (script-settings `tags`), in the order set. Refused with `scriptNotFound` when there is no such script. */
  tags(accountId: string, script: string): Promise<string[]>;
  /** Replaces a script's tags (kept across uploads, removed with it). Refused with `scriptNotFound` when there is no such script. */
  setTags(accountId: string, script: string, tags: readonly string[]): Promise<void>;
  /** Secret values, for the runtime only (never for an API answer). */
  secretValues(accountId: string, script: string): Promise<Map<string, string>>;
  /**
   * Sets (`value`) or removes (undefined) one secret and deploys a new version `versionId` (the live one's content), at
   * once; false when nothing changed. Refused with `scriptNotFound` when there is no such script.
   */
  changeSecret(accountId: string, script: string, name: string, value: string | undefined, versionId: string, author?: ChangeAuthor): Promise<boolean>;

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
