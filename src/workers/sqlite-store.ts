import type { ContentStore } from "../core/content/store.js";
import type { Db } from "../core/db/sqlite.js";
import type { SecretBox } from "../core/secret-box.js";
import { WorkersErrors } from "./errors.js";
import { ModuleContent } from "./module-content.js";
import {
  changedSecrets,
  DEPLOYMENT_COLUMNS,
  deploymentOf,
  deploymentRow,
  deployedRow,
  liveModuleIds,
  liveVersionIds,
  secretStamps,
  toDeployment,
  toRecord,
  toRow,
  toVersion,
  unnamedModules,
  VERSION_COLUMNS,
  versionRow,
  versionsToPrune,
  type DeploymentRow,
  type ScriptRow,
  type VersionRow,
} from "./rows.js";
import {
  secretSealContext,
  VersionLimits,
  type ChangeAuthor,
  type DeploymentRecord,
  type ModuleRef,
  type Schedule,
  type ScriptRecord,
  type ScriptSchedule,
  type VersionMeta,
  type VersionRecord,
  type WorkersStore,
} from "./store.js";

const UPLOAD: VersionMeta = { triggeredBy: "upload", source: "api" };
const named = (cols: string) =>
  cols
    .split(", ")
    .map((c) => `@${c}`)
    .join(", ");

/** The SQLite WorkersStore (`<state>/db/workers.sqlite`); module bytes live in the content store. */
export class SqliteWorkersStore extends ModuleContent implements WorkersStore {
  private readonly q;

  constructor(
    private readonly db: Db,
    content: ContentStore,
    private readonly box: SecretBox,
  ) {
    super(content);
    this.q = {
      get: db.prepare<[string, string], ScriptRow>("SELECT * FROM scripts WHERE account_id = ? AND name = ?"),
      byName: db.prepare<[string], ScriptRow>("SELECT * FROM scripts WHERE name = ?"),
      list: db.prepare<[string], ScriptRow>("SELECT * FROM scripts WHERE account_id = ? ORDER BY name"),
      all: db.prepare<[], ScriptRow>("SELECT * FROM scripts ORDER BY account_id, name"),
      upsert: db.prepare(
        `INSERT INTO scripts (account_id, name, version_id, etag, main_module, compatibility_date, compatibility_flags, bindings, modules, created_on, modified_on)
         VALUES (@account_id, @name, @version_id, @etag, @main_module, @compatibility_date, @compatibility_flags, @bindings, @modules, @created_on, @modified_on)
         ON CONFLICT (account_id, name) DO UPDATE SET version_id = excluded.version_id, etag = excluded.etag, main_module = excluded.main_module,
           compatibility_date = excluded.compatibility_date, compatibility_flags = excluded.compatibility_flags, bindings = excluded.bindings,
           modules = excluded.modules, modified_on = excluded.modified_on`,
      ),
      touch: db.prepare<[string, string, string, string]>("UPDATE scripts SET version_id = ?, modified_on = ? WHERE account_id = ? AND name = ?"),
      del: db.prepare<[string, string]>("DELETE FROM scripts WHERE account_id = ? AND name = ?"),
      allVersionModules: db.prepare<[], { modules: string }>("SELECT modules FROM versions"),
      versionModules: db.prepare<[string, string], { id: string; modules: string }>(
        "SELECT id, modules FROM versions WHERE account_id = ? AND script = ? ORDER BY number DESC",
      ),
      version: db.prepare<[string, string, string], VersionRow>(`SELECT ${VERSION_COLUMNS} FROM versions WHERE account_id = ? AND script = ? AND id = ?`),
      versionPage: db.prepare<[string, string, number, number], VersionRow>(
        `SELECT ${VERSION_COLUMNS} FROM versions WHERE account_id = ? AND script = ? ORDER BY number DESC LIMIT ? OFFSET ?`,
      ),
      countVersions: db.prepare<[string, string], { n: number }>("SELECT count(*) AS n FROM versions WHERE account_id = ? AND script = ?"),
      nextNumber: db.prepare<[string, string], { n: number }>("SELECT coalesce(max(number), 0) + 1 AS n FROM versions WHERE account_id = ? AND script = ?"),
      putVersion: db.prepare(`INSERT INTO versions (${VERSION_COLUMNS}) VALUES (${named(VERSION_COLUMNS)})`),
      delVersion: db.prepare<[string, string, string]>("DELETE FROM versions WHERE account_id = ? AND script = ? AND id = ?"),
      deployments: db.prepare<[string, string], DeploymentRow>(
        `SELECT ${DEPLOYMENT_COLUMNS} FROM deployments WHERE account_id = ? AND script = ? ORDER BY seq DESC`,
      ),
      nextSeq: db.prepare<[string, string], { n: number }>("SELECT coalesce(max(seq), 0) + 1 AS n FROM deployments WHERE account_id = ? AND script = ?"),
      putDeployment: db.prepare(`INSERT INTO deployments (${DEPLOYMENT_COLUMNS}) VALUES (${named(DEPLOYMENT_COLUMNS)})`),
      delDeployment: db.prepare<[string, string, string]>("DELETE FROM deployments WHERE account_id = ? AND script = ? AND id = ?"),
      secretNames: db.prepare<[string, string], { name: string }>("SELECT name FROM secrets WHERE account_id = ? AND script = ? ORDER BY name"),
      tags: db.prepare<[string, string], { tags: string }>("SELECT tags FROM scripts WHERE account_id = ? AND name = ?"),
      setTags: db.prepare<[string, string, string]>("UPDATE scripts SET tags = ? WHERE account_id = ? AND name = ?"),
      secrets: db.prepare<[string, string], { name: string; value: string }>(
        "SELECT name, value FROM secrets WHERE account_id = ? AND script = ? ORDER BY name",
      ),
      putSecret: db.prepare<[string, string, string, string]>(
        "INSERT INTO secrets (account_id, script, name, value, sealed) VALUES (?, ?, ?, ?, 1) ON CONFLICT (account_id, script, name) DO UPDATE SET value = excluded.value, sealed = 1",
      ),
      delSecret: db.prepare<[string, string, string]>("DELETE FROM secrets WHERE account_id = ? AND script = ? AND name = ?"),
      schedules: db.prepare<[string, string], { cron: string; created_on: string; modified_on: string }>(
        "SELECT cron, created_on, modified_on FROM schedules WHERE account_id = ? AND script = ? ORDER BY created_on, rowid",
      ),
      countSchedules: db.prepare<[string, string], { n: number }>("SELECT count(*) AS n FROM schedules WHERE account_id = ? AND script != ?"),
      delSchedule: db.prepare<[string, string, string]>("DELETE FROM schedules WHERE account_id = ? AND script = ? AND cron = ?"),
      putSchedule: db.prepare<[string, string, string, string, string]>(
        "INSERT INTO schedules (account_id, script, cron, created_on, modified_on) VALUES (?, ?, ?, ?, ?) ON CONFLICT (account_id, script, cron) DO NOTHING",
      ),
      allSchedules: db.prepare<[], { account_id: string; script: string; cron: string }>(
        "SELECT account_id, script, cron FROM schedules ORDER BY account_id, script, created_on, rowid",
      ),
      claimTick: db.prepare<[number, string, string, string, number]>(
        "UPDATE schedules SET last_tick = ? WHERE account_id = ? AND script = ? AND cron = ? AND last_tick < ?",
      ),
    };
    // Freed pages are zeroed, so a replaced or deleted secret (or one stored in clear before sealing) does not linger in the file.
    db.pragma("secure_delete = ON");
    this.sealOldSecrets();
    this.checkKey();
  }

  /** Seals the values stored in clear before secrets were sealed (one transaction: all or none). */
  private sealOldSecrets(): void {
    const rows = this.db
      .prepare<[], { account_id: string; script: string; name: string; value: string }>("SELECT account_id, script, name, value FROM secrets WHERE sealed = 0")
      .all();
    if (rows.length === 0) return;
    const update = this.db.prepare<[string, string, string, string]>(
      "UPDATE secrets SET value = ?, sealed = 1 WHERE account_id = ? AND script = ? AND name = ?",
    );
    this.db.transaction(() => {
      for (const r of rows) update.run(this.sealed(r.account_id, r.script, r.name, r.value), r.account_id, r.script, r.name);
    })();
    // The pages holding the clear values are overwritten in the main file now, not at some later checkpoint.
    this.db.pragma("wal_checkpoint(TRUNCATE)");
  }

  /** A key that cannot open the stored secrets stops the start with the reason, not a script that fails later. */
  private checkKey(): void {
    const one = this.db
      .prepare<[], { account_id: string; script: string; name: string; value: string }>("SELECT account_id, script, name, value FROM secrets LIMIT 1")
      .get();
    if (one) this.box.open(one.value, secretSealContext(one.account_id, one.script, one.name));
  }

  private sealed(accountId: string, script: string, name: string, value: string): string {
    return this.box.seal(value, secretSealContext(accountId, script, name));
  }

  private getSync(accountId: string, name: string): ScriptRecord | undefined {
    const r = this.q.get.get(accountId, name);
    return r && toRecord(r);
  }

  async get(accountId: string, name: string): Promise<ScriptRecord | undefined> {
    return this.getSync(accountId, name);
  }

  async byName(name: string): Promise<ScriptRecord | undefined> {
    const r = this.q.byName.get(name);
    return r && toRecord(r);
  }

  async list(accountId: string): Promise<ScriptRecord[]> {
    return this.q.list.all(accountId).map(toRecord);
  }

  async all(): Promise<ScriptRecord[]> {
    return this.q.all.all().map(toRecord);
  }

  async gcContent(graceMs?: number): Promise<number> {
    return this.gcModules(liveModuleIds([...this.q.all.all(), ...this.q.allVersionModules.all()]), graceMs);
  }

  private stampsNow(accountId: string, script: string): Map<string, string> {
    return secretStamps(this.q.secrets.all(accountId, script));
  }

  /** Keeps `script`'s content as a new version (inside the caller's transaction). */
  private keepVersion(script: ScriptRecord, meta: VersionMeta): VersionRow {
    const number = this.q.nextNumber.get(script.accountId, script.name)!.n;
    const row = versionRow(script, number, this.stampsNow(script.accountId, script.name), meta, script.modifiedOn);
    this.q.putVersion.run(row);
    return row;
  }

  private recordDeployment(accountId: string, script: string, d: DeploymentRecord): void {
    this.q.putDeployment.run(deploymentRow(accountId, script, this.q.nextSeq.get(accountId, script)!.n, d));
  }

  /** Removes the versions and deployments past the limits (inside the caller's transaction); answers the module bytes no longer named. */
  private prune(accountId: string, script: string): ModuleRef[] {
    const live = this.q.get.get(accountId, script)!;
    const versions = this.q.versionModules.all(accountId, script);
    const deployments = this.q.deployments.all(accountId, script);
    const gone = versionsToPrune(versions, liveVersionIds(live.version_id, deployments[0]), VersionLimits.versions);
    const goneIds = new Set(gone.map((v) => v.id));
    for (const v of gone) this.q.delVersion.run(accountId, script, v.id);
    deployments.forEach((d, i) => {
      const names = toDeployment(d).versions.some((v) => goneIds.has(v.versionId));
      if (names || i >= VersionLimits.deployments) this.q.delDeployment.run(accountId, script, d.id);
    });
    return unnamedModules(gone, [live, ...versions.filter((v) => !goneIds.has(v.id))]);
  }

  async save(script: ScriptRecord, secrets: readonly { name: string; text: string }[], meta: VersionMeta = UPLOAD): Promise<void> {
    const unnamed = this.db.transaction(() => {
      const owner = this.q.byName.get(script.name);
      if (owner && owner.account_id !== script.accountId) throw WorkersErrors.nameTaken(script.name);
      const old = this.getSync(script.accountId, script.name);
      this.q.upsert.run(toRow(script, old?.createdOn ?? script.createdOn));
      for (const s of secrets) this.q.putSecret.run(script.accountId, script.name, s.name, this.sealed(script.accountId, script.name, s.name, s.text));
      this.keepVersion(script, meta);
      this.recordDeployment(script.accountId, script.name, deploymentOf(script.versionId, script.modifiedOn, meta));
      return this.prune(script.accountId, script.name);
    })();
    await this.deleteModules(unnamed);
  }

  async addVersion(script: ScriptRecord, meta: VersionMeta): Promise<VersionRecord> {
    const [row, unnamed] = this.db.transaction(() => {
      if (!this.q.get.get(script.accountId, script.name)) throw WorkersErrors.scriptNotFound();
      const kept = this.keepVersion(script, meta);
      return [kept, this.prune(script.accountId, script.name)] as const;
    })();
    await this.deleteModules(unnamed);
    return toVersion(row);
  }

  async secretsChangedSince(accountId: string, script: string, versionId: string): Promise<string[]> {
    const v = this.q.version.get(accountId, script, versionId);
    if (!v) throw WorkersErrors.versionNotFound(versionId);
    return changedSecrets(v.secrets, this.stampsNow(accountId, script));
  }

  async deploy(accountId: string, script: string, deployment: DeploymentRecord, force: boolean): Promise<ScriptRecord> {
    const [live, unnamed] = this.db.transaction(() => {
      const old = this.q.get.get(accountId, script);
      if (!old) throw WorkersErrors.scriptNotFound();
      const rows = new Map(deployment.versions.map((d) => [d.versionId, this.q.version.get(accountId, script, d.versionId)]));
      const row = deployedRow(deployment, rows, this.stampsNow(accountId, script), old.created_on, force);
      this.q.upsert.run(row);
      this.recordDeployment(accountId, script, deployment);
      return [row, this.prune(accountId, script)] as const;
    })();
    await this.deleteModules(unnamed);
    return toRecord(live);
  }

  async versions(accountId: string, script: string, page: number, perPage: number): Promise<{ items: VersionRecord[]; total: number }> {
    if (!this.q.get.get(accountId, script)) throw WorkersErrors.scriptNotFound();
    return {
      items: this.q.versionPage.all(accountId, script, perPage, (page - 1) * perPage).map(toVersion),
      total: this.q.countVersions.get(accountId, script)!.n,
    };
  }

  async version(accountId: string, script: string, id: string): Promise<VersionRecord | undefined> {
    const r = this.q.version.get(accountId, script, id);
    return r && toVersion(r);
  }

  async deployments(accountId: string, script: string): Promise<DeploymentRecord[]> {
    if (!this.q.get.get(accountId, script)) throw WorkersErrors.scriptNotFound();
    return this.q.deployments.all(accountId, script).map(toDeployment);
  }

  async delete(accountId: string, name: string): Promise<boolean> {
    const removed = this.db.transaction(() => {
      const old = this.q.get.get(accountId, name);
      if (!old) return undefined;
      const versions = this.q.versionModules.all(accountId, name);
      this.q.del.run(accountId, name);
      return unnamedModules([old, ...versions], []);
    })();
    if (!removed) return false;
    await this.deleteModules(removed);
    return true;
  }

  async secretNames(accountId: string, script: string): Promise<string[]> {
    return this.q.secretNames.all(accountId, script).map((r) => r.name);
  }

  async tags(accountId: string, script: string): Promise<string[]> {
    const row = this.q.tags.get(accountId, script);
    if (!row) throw WorkersErrors.scriptNotFound();
    return JSON.parse(row.tags) as string[];
  }

  async setTags(accountId: string, script: string, tags: readonly string[]): Promise<void> {
    if (this.q.setTags.run(JSON.stringify(tags), accountId, script).changes === 0) throw WorkersErrors.scriptNotFound();
  }

  async secretValues(accountId: string, script: string): Promise<Map<string, string>> {
    return new Map(this.q.secrets.all(accountId, script).map((r) => [r.name, this.box.open(r.value, secretSealContext(accountId, script, r.name))]));
  }

  async changeSecret(
    accountId: string,
    script: string,
    name: string,
    value: string | undefined,
    versionId: string,
    author: ChangeAuthor = { source: "api" },
  ): Promise<boolean> {
    const [changed, unnamed] = this.db.transaction(() => {
      const live = this.getSync(accountId, script);
      if (!live) throw WorkersErrors.scriptNotFound();
      const changed =
        value === undefined
          ? this.q.delSecret.run(accountId, script, name).changes > 0
          : this.q.putSecret.run(accountId, script, name, this.sealed(accountId, script, name, value)).changes > 0;
      if (!changed) return [false, []] as const;
      const now = new Date().toISOString();
      this.q.touch.run(versionId, now, accountId, script);
      const meta: VersionMeta = { ...author, triggeredBy: "secret" };
      this.keepVersion({ ...live, versionId, modifiedOn: now }, meta);
      this.recordDeployment(accountId, script, deploymentOf(versionId, now, meta));
      return [true, this.prune(accountId, script)] as const;
    })();
    await this.deleteModules(unnamed);
    return changed;
  }

  async schedules(accountId: string, script: string): Promise<Schedule[]> {
    if (!this.q.get.get(accountId, script)) throw WorkersErrors.scriptNotFound();
    return this.q.schedules.all(accountId, script).map((r) => ({ cron: r.cron, createdOn: r.created_on, modifiedOn: r.modified_on }));
  }

  async setSchedules(accountId: string, script: string, crons: readonly string[], accountLimit: number): Promise<Schedule[]> {
    this.db.transaction(() => {
      if (!this.q.get.get(accountId, script)) throw WorkersErrors.scriptNotFound();
      const total = this.q.countSchedules.get(accountId, script)!.n + crons.length;
      if (total > accountLimit) throw WorkersErrors.tooManySchedules(accountLimit, total);
      const keep = new Set(crons);
      for (const old of this.q.schedules.all(accountId, script)) if (!keep.has(old.cron)) this.q.delSchedule.run(accountId, script, old.cron);
      const now = new Date().toISOString();
      for (const cron of crons) this.q.putSchedule.run(accountId, script, cron, now, now);
    })();
    return this.schedules(accountId, script);
  }

  async allSchedules(): Promise<ScriptSchedule[]> {
    return this.q.allSchedules.all().map((r) => ({ accountId: r.account_id, script: r.script, cron: r.cron }));
  }

  async claimTick(schedule: ScriptSchedule, tick: number): Promise<boolean> {
    return this.q.claimTick.run(tick, schedule.accountId, schedule.script, schedule.cron, tick).changes === 1;
  }
}
