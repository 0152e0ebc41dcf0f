import type { Bus } from "../core/cluster/bus.js";
import type { ContentStore } from "../core/content/store.js";
import type { Postgres, SqlRunner, Transaction } from "../core/db/postgres.js";
import type { SecretBox } from "../core/secret-box.js";
import { WorkersErrors } from "./errors.js";
import { ModuleContent } from "./module-content.js";
import {
  changedSecrets,
  DEPLOYMENT_COLUMNS,
  deploymentOf,
  deploymentRow,
  liveModuleIds,
  deployedRow,
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
/** `$1, $2, …` for the columns of a list. */
const placeholders = (cols: string) =>
  cols
    .split(", ")
    .map((_, i) => `$${i + 1}`)
    .join(", ");
const valuesOf = (cols: string, row: object) => cols.split(", ").map((c) => (row as Record<string, unknown>)[c]);

/** The bus area of Workers' change notices. */
export const WORKERS_AREA = "workers";
/** What a notice names: one script (its name is unique platform-wide). Never a version, a secret or a module. */
export const scriptChanged = (name: string) => `script:${name}`;
/** The script a notice names, or undefined for one this node does not understand. */
export const changedScript = (what: string): string | undefined => (what.startsWith("script:") ? what.slice("script:".length) : undefined);

const SCRIPT_COLUMNS = "account_id, name, version_id, etag, main_module, compatibility_date, compatibility_flags, bindings, modules, created_on, modified_on";
const isCode = (err: unknown, code: string) => (err as { code?: unknown }).code === code;

/**
 * WorkersStore on PostgreSQL (schema `workers`, WORKERS_PG_MIGRATIONS), shared by every node; module bytes in the
 * content store (the bucket in distributed mode), written before the row naming them commits. Secrets are sealed
 * with the platform's key as on SQLite (every node must have the same EDGE_SECRETS_KEY). Every committed change to
 * a script (a version, a secret, its triggers, its deletion) sends a bus notice `script:<name>` from inside its
 * transaction, so that the other nodes run the new version and reload their cron clocks (service.ts).
 */
export class PgWorkersStore extends ModuleContent implements WorkersStore {
  constructor(
    private readonly pg: Postgres,
    content: ContentStore,
    private readonly box: SecretBox,
    private readonly bus: Bus,
  ) {
    super(content);
  }

  /** A key that cannot open the stored secrets stops the start with the reason (called once the schema exists). */
  async checkKey(): Promise<void> {
    const one = await this.pg.row<{ account_id: string; script: string; name: string; value: string }>(
      "SELECT account_id, script, name, value FROM workers.secrets LIMIT 1",
    );
    if (one) this.box.open(one.value, secretSealContext(one.account_id, one.script, one.name));
  }

  private sealed(accountId: string, script: string, name: string, value: string): string {
    return this.box.seal(value, secretSealContext(accountId, script, name));
  }

  private announce(tx: Transaction, name: string): Promise<void> {
    return this.bus.publish(WORKERS_AREA, scriptChanged(name), tx);
  }

  /** The script's row, locked until the transaction ends when `lock`; undefined when there is none. */
  private async row(on: SqlRunner, accountId: string, name: string, lock = false): Promise<ScriptRow | undefined> {
    return on.row<ScriptRow>(`SELECT ${SCRIPT_COLUMNS} FROM workers.scripts WHERE account_id = $1 AND name = $2${lock ? " FOR UPDATE" : ""}`, [
      accountId,
      name,
    ]);
  }

  async get(accountId: string, name: string): Promise<ScriptRecord | undefined> {
    const r = await this.row(this.pg, accountId, name);
    return r && toRecord(r);
  }

  async byName(name: string): Promise<ScriptRecord | undefined> {
    const r = await this.pg.row<ScriptRow>(`SELECT ${SCRIPT_COLUMNS} FROM workers.scripts WHERE name = $1`, [name]);
    return r && toRecord(r);
  }

  async list(accountId: string): Promise<ScriptRecord[]> {
    return (await this.pg.rows<ScriptRow>(`SELECT ${SCRIPT_COLUMNS} FROM workers.scripts WHERE account_id = $1 ORDER BY name`, [accountId])).map(toRecord);
  }

  async all(): Promise<ScriptRecord[]> {
    return (await this.pg.rows<ScriptRow>(`SELECT ${SCRIPT_COLUMNS} FROM workers.scripts ORDER BY account_id, name`)).map(toRecord);
  }

  /**
   * The live set is read before the content is listed, so a module written after it is younger than the grace
   * time and kept: an upload on another node writes its modules, starts them, then commits (seconds, not the hour).
   */
  async gcContent(graceMs?: number): Promise<number> {
    const rows = await this.pg.rows<{ modules: string }>("SELECT modules FROM workers.scripts UNION ALL SELECT modules FROM workers.versions");
    return this.gcModules(liveModuleIds(rows), graceMs);
  }

  private async upsertLive(tx: Transaction, r: ScriptRow): Promise<void> {
    try {
      await tx.execute(
        `INSERT INTO workers.scripts (${SCRIPT_COLUMNS}) VALUES (${placeholders(SCRIPT_COLUMNS)})
         ON CONFLICT (account_id, name) DO UPDATE SET version_id = excluded.version_id, etag = excluded.etag, main_module = excluded.main_module,
           compatibility_date = excluded.compatibility_date, compatibility_flags = excluded.compatibility_flags, bindings = excluded.bindings,
           modules = excluded.modules, modified_on = excluded.modified_on`,
        valuesOf(SCRIPT_COLUMNS, r),
      );
    } catch (err) {
      // Another account took the name on another node between the check and the insert.
      if (isCode(err, "23505")) throw WorkersErrors.nameTaken(r.name);
      throw err;
    }
  }

  private async stampsNow(on: SqlRunner, accountId: string, script: string): Promise<Map<string, string>> {
    return secretStamps(
      await on.rows<{ name: string; value: string }>("SELECT name, value FROM workers.secrets WHERE account_id = $1 AND script = $2", [accountId, script]),
    );
  }

  /** Keeps `script`'s content as a new version (the caller holds the script's row lock, so numbers do not clash). */
  private async keepVersion(tx: Transaction, script: ScriptRecord, meta: VersionMeta): Promise<VersionRow> {
    const next = await tx.row<{ n: string }>("SELECT coalesce(max(number), 0) + 1 AS n FROM workers.versions WHERE account_id = $1 AND script = $2", [
      script.accountId,
      script.name,
    ]);
    const row = versionRow(script, Number(next!.n), await this.stampsNow(tx, script.accountId, script.name), meta, script.modifiedOn);
    await tx.execute(`INSERT INTO workers.versions (${VERSION_COLUMNS}) VALUES (${placeholders(VERSION_COLUMNS)})`, valuesOf(VERSION_COLUMNS, row));
    return row;
  }

  private async recordDeployment(tx: Transaction, accountId: string, script: string, d: DeploymentRecord): Promise<void> {
    const next = await tx.row<{ n: string }>("SELECT coalesce(max(seq), 0) + 1 AS n FROM workers.deployments WHERE account_id = $1 AND script = $2", [
      accountId,
      script,
    ]);
    const row = deploymentRow(accountId, script, Number(next!.n), d);
    await tx.execute(`INSERT INTO workers.deployments (${DEPLOYMENT_COLUMNS}) VALUES (${placeholders(DEPLOYMENT_COLUMNS)})`, valuesOf(DEPLOYMENT_COLUMNS, row));
  }

  private deploymentRows(on: SqlRunner, accountId: string, script: string): Promise<DeploymentRow[]> {
    return on.rows<DeploymentRow>(`SELECT ${DEPLOYMENT_COLUMNS} FROM workers.deployments WHERE account_id = $1 AND script = $2 ORDER BY seq DESC`, [
      accountId,
      script,
    ]);
  }

  /** Removes the versions and deployments past the limits (inside the caller's transaction); answers the module bytes no longer named. */
  private async prune(tx: Transaction, accountId: string, script: string): Promise<ModuleRef[]> {
    const live = (await this.row(tx, accountId, script))!;
    const versions = await tx.rows<{ id: string; modules: string }>(
      "SELECT id, modules FROM workers.versions WHERE account_id = $1 AND script = $2 ORDER BY number DESC",
      [accountId, script],
    );
    const deployments = await this.deploymentRows(tx, accountId, script);
    const gone = versionsToPrune(versions, liveVersionIds(live.version_id, deployments[0]), VersionLimits.versions);
    const goneIds = new Set(gone.map((v) => v.id));
    if (gone.length > 0) {
      await tx.execute("DELETE FROM workers.versions WHERE account_id = $1 AND script = $2 AND id = ANY($3::text[])", [accountId, script, [...goneIds]]);
    }
    const dropped = deployments.filter((d, i) => i >= VersionLimits.deployments || toDeployment(d).versions.some((v) => goneIds.has(v.versionId)));
    if (dropped.length > 0) {
      await tx.execute("DELETE FROM workers.deployments WHERE account_id = $1 AND script = $2 AND id = ANY($3::text[])", [
        accountId,
        script,
        dropped.map((d) => d.id),
      ]);
    }
    return unnamedModules(gone, [live, ...versions.filter((v) => !goneIds.has(v.id))]);
  }

  async save(script: ScriptRecord, secrets: readonly { name: string; text: string }[], meta: VersionMeta = UPLOAD): Promise<void> {
    const unnamed = await this.pg.withTransaction(async (tx) => {
      const owner = await tx.row<{ account_id: string }>("SELECT account_id FROM workers.scripts WHERE name = $1", [script.name]);
      if (owner && owner.account_id !== script.accountId) throw WorkersErrors.nameTaken(script.name);
      const old = await this.row(tx, script.accountId, script.name, true);
      await this.upsertLive(tx, toRow(script, old?.created_on ?? script.createdOn));
      for (const s of secrets) await this.putSecret(tx, script.accountId, script.name, s.name, s.text);
      await this.keepVersion(tx, script, meta);
      await this.recordDeployment(tx, script.accountId, script.name, deploymentOf(script.versionId, script.modifiedOn, meta));
      const unnamed = await this.prune(tx, script.accountId, script.name);
      await this.announce(tx, script.name);
      return unnamed;
    });
    await this.deleteModules(unnamed);
  }

  async addVersion(script: ScriptRecord, meta: VersionMeta): Promise<VersionRecord> {
    const [row, unnamed] = await this.pg.withTransaction(async (tx) => {
      if (!(await this.row(tx, script.accountId, script.name, true))) throw WorkersErrors.scriptNotFound();
      const kept = await this.keepVersion(tx, script, meta);
      return [kept, await this.prune(tx, script.accountId, script.name)] as const;
    });
    await this.deleteModules(unnamed);
    return toVersion(row);
  }

  private versionRow(on: SqlRunner, accountId: string, script: string, id: string): Promise<VersionRow | undefined> {
    return on.row<VersionRow>(`SELECT ${VERSION_COLUMNS} FROM workers.versions WHERE account_id = $1 AND script = $2 AND id = $3`, [accountId, script, id]);
  }

  async secretsChangedSince(accountId: string, script: string, versionId: string): Promise<string[]> {
    const v = await this.versionRow(this.pg, accountId, script, versionId);
    if (!v) throw WorkersErrors.versionNotFound(versionId);
    return changedSecrets(v.secrets, await this.stampsNow(this.pg, accountId, script));
  }

  async deploy(accountId: string, script: string, deployment: DeploymentRecord, force: boolean): Promise<ScriptRecord> {
    const [live, unnamed] = await this.pg.withTransaction(async (tx) => {
      const old = await this.row(tx, accountId, script, true);
      if (!old) throw WorkersErrors.scriptNotFound();
      const rows = new Map<string, VersionRow | undefined>();
      for (const { versionId } of deployment.versions) rows.set(versionId, await this.versionRow(tx, accountId, script, versionId));
      const row = deployedRow(deployment, rows, await this.stampsNow(tx, accountId, script), old.created_on, force);
      await this.upsertLive(tx, row);
      await this.recordDeployment(tx, accountId, script, deployment);
      const unnamed = await this.prune(tx, accountId, script);
      await this.announce(tx, script);
      return [row, unnamed] as const;
    });
    await this.deleteModules(unnamed);
    return toRecord(live);
  }

  async versions(accountId: string, script: string, page: number, perPage: number): Promise<{ items: VersionRecord[]; total: number }> {
    if (!(await this.row(this.pg, accountId, script))) throw WorkersErrors.scriptNotFound();
    const items = await this.pg.rows<VersionRow>(
      `SELECT ${VERSION_COLUMNS} FROM workers.versions WHERE account_id = $1 AND script = $2 ORDER BY number DESC LIMIT $3 OFFSET $4`,
      [accountId, script, perPage, (page - 1) * perPage],
    );
    const total = await this.pg.row<{ n: string }>("SELECT count(*) AS n FROM workers.versions WHERE account_id = $1 AND script = $2", [accountId, script]);
    return { items: items.map(toVersion), total: Number(total!.n) };
  }

  async version(accountId: string, script: string, id: string): Promise<VersionRecord | undefined> {
    const r = await this.versionRow(this.pg, accountId, script, id);
    return r && toVersion(r);
  }

  async deployments(accountId: string, script: string): Promise<DeploymentRecord[]> {
    if (!(await this.row(this.pg, accountId, script))) throw WorkersErrors.scriptNotFound();
    return (await this.deploymentRows(this.pg, accountId, script)).map(toDeployment);
  }

  async delete(accountId: string, name: string): Promise<boolean> {
    const removed = await this.pg.withTransaction(async (tx) => {
      const versions = await tx.rows<{ modules: string }>("SELECT modules FROM workers.versions WHERE account_id = $1 AND script = $2", [accountId, name]);
      const old = await tx.row<{ modules: string }>("DELETE FROM workers.scripts WHERE account_id = $1 AND name = $2 RETURNING modules", [accountId, name]);
      if (!old) return undefined;
      await this.announce(tx, name);
      return unnamedModules([old, ...versions], []);
    });
    if (!removed) return false;
    await this.deleteModules(removed);
    return true;
  }

  async secretNames(accountId: string, script: string): Promise<string[]> {
    return (
      await this.pg.rows<{ name: string }>("SELECT name FROM workers.secrets WHERE account_id = $1 AND script = $2 ORDER BY name", [accountId, script])
    ).map((r) => r.name);
  }

  async tags(accountId: string, script: string): Promise<string[]> {
    const row = await this.pg.row<{ tags: string }>("SELECT tags FROM workers.scripts WHERE account_id = $1 AND name = $2", [accountId, script]);
    if (!row) throw WorkersErrors.scriptNotFound();
    return JSON.parse(row.tags) as string[];
  }

  async setTags(accountId: string, script: string, tags: readonly string[]): Promise<void> {
    const row = await this.pg.row<{ name: string }>("UPDATE workers.scripts SET tags = $1 WHERE account_id = $2 AND name = $3 RETURNING name", [
      JSON.stringify(tags),
      accountId,
      script,
    ]);
    if (!row) throw WorkersErrors.scriptNotFound();
  }

  async secretValues(accountId: string, script: string): Promise<Map<string, string>> {
    const rows = await this.pg.rows<{ name: string; value: string }>(
      "SELECT name, value FROM workers.secrets WHERE account_id = $1 AND script = $2 ORDER BY name",
      [accountId, script],
    );
    return new Map(rows.map((r) => [r.name, this.box.open(r.value, secretSealContext(accountId, script, r.name))]));
  }

  private putSecret(tx: Transaction, accountId: string, script: string, name: string, text: string): Promise<number> {
    return tx.execute(
      `INSERT INTO workers.secrets (account_id, script, name, value) VALUES ($1, $2, $3, $4)
       ON CONFLICT (account_id, script, name) DO UPDATE SET value = excluded.value`,
      [accountId, script, name, this.sealed(accountId, script, name, text)],
    );
  }

  async changeSecret(
    accountId: string,
    script: string,
    name: string,
    value: string | undefined,
    versionId: string,
    author: ChangeAuthor = { source: "api" },
  ): Promise<boolean> {
    const [changed, unnamed] = await this.pg.withTransaction(async (tx) => {
      const live = await this.row(tx, accountId, script, true);
      if (!live) throw WorkersErrors.scriptNotFound();
      const changed =
        value === undefined
          ? (await tx.execute("DELETE FROM workers.secrets WHERE account_id = $1 AND script = $2 AND name = $3", [accountId, script, name])) > 0
          : (await this.putSecret(tx, accountId, script, name, value)) > 0;
      if (!changed) return [false, []] as const;
      const now = new Date().toISOString();
      await tx.execute("UPDATE workers.scripts SET version_id = $1, modified_on = $2 WHERE account_id = $3 AND name = $4", [versionId, now, accountId, script]);
      const meta: VersionMeta = { ...author, triggeredBy: "secret" };
      await this.keepVersion(tx, { ...toRecord(live), versionId, modifiedOn: now }, meta);
      await this.recordDeployment(tx, accountId, script, deploymentOf(versionId, now, meta));
      const unnamed = await this.prune(tx, accountId, script);
      await this.announce(tx, script);
      return [true, unnamed] as const;
    });
    await this.deleteModules(unnamed);
    return changed;
  }

  private async schedulesOf(on: SqlRunner, accountId: string, script: string): Promise<Schedule[]> {
    const rows = await on.rows<{ cron: string; created_on: string; modified_on: string }>(
      "SELECT cron, created_on, modified_on FROM workers.schedules WHERE account_id = $1 AND script = $2 ORDER BY created_on, id",
      [accountId, script],
    );
    return rows.map((r) => ({ cron: r.cron, createdOn: r.created_on, modifiedOn: r.modified_on }));
  }

  async schedules(accountId: string, script: string): Promise<Schedule[]> {
    if (!(await this.row(this.pg, accountId, script))) throw WorkersErrors.scriptNotFound();
    return this.schedulesOf(this.pg, accountId, script);
  }

  async setSchedules(accountId: string, script: string, crons: readonly string[], accountLimit: number): Promise<Schedule[]> {
    return this.pg.withTransaction(async (tx) => {
      // The account's changes take turns (on any node), so two scripts' changes cannot pass the limit together.
      await tx.execute("SELECT pg_advisory_xact_lock(hashtextextended($1, 0))", [`workers.schedules:${accountId}`]);
      if (!(await this.row(tx, accountId, script, true))) throw WorkersErrors.scriptNotFound();
      const others = await tx.row<{ n: string }>("SELECT count(*) AS n FROM workers.schedules WHERE account_id = $1 AND script <> $2", [accountId, script]);
      const total = Number(others!.n) + crons.length;
      if (total > accountLimit) throw WorkersErrors.tooManySchedules(accountLimit, total);
      await tx.execute("DELETE FROM workers.schedules WHERE account_id = $1 AND script = $2 AND NOT (cron = ANY($3::text[]))", [accountId, script, crons]);
      const now = new Date().toISOString();
      for (const cron of crons) {
        await tx.execute(
          `INSERT INTO workers.schedules (account_id, script, cron, created_on, modified_on) VALUES ($1, $2, $3, $4, $4)
           ON CONFLICT (account_id, script, cron) DO NOTHING`,
          [accountId, script, cron, now],
        );
      }
      await this.announce(tx, script);
      return this.schedulesOf(tx, accountId, script);
    });
  }

  async allSchedules(): Promise<ScriptSchedule[]> {
    const rows = await this.pg.rows<{ account_id: string; script: string; cron: string }>(
      "SELECT account_id, script, cron FROM workers.schedules ORDER BY account_id, script, created_on, id",
    );
    return rows.map((r) => ({ accountId: r.account_id, script: r.script, cron: r.cron }));
  }

  /**
   * One statement: the first node to update the row wins; a node claiming the same tick at the same moment waits
   * for that commit, re-reads the row (READ COMMITTED) and finds `last_tick < tick` false, so it loses.
   */
  async claimTick(schedule: ScriptSchedule, tick: number): Promise<boolean> {
    const changed = await this.pg.execute(
      "UPDATE workers.schedules SET last_tick = $1 WHERE account_id = $2 AND script = $3 AND cron = $4 AND last_tick < $1",
      [tick, schedule.accountId, schedule.script, schedule.cron],
    );
    return changed === 1;
  }
}
