import type { Bus } from "../core/cluster/bus.js";
import type { ContentStore } from "../core/content/store.js";
import type { Postgres, SqlRunner, Transaction } from "../core/db/postgres.js";
import type { SecretBox } from "../core/secret-box.js";
import { WorkersErrors } from "./errors.js";
import { ModuleContent } from "./module-content.js";
import { liveModuleIds, toRecord, toRow, type ScriptRow } from "./rows.js";
import { secretSealContext, type ModuleRef, type Schedule, type ScriptRecord, type ScriptSchedule, type WorkersStore } from "./store.js";

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
    return this.gcModules(liveModuleIds(await this.pg.rows<{ modules: string }>("SELECT modules FROM workers.scripts")), graceMs);
  }

  async save(script: ScriptRecord, secrets: readonly { name: string; text: string }[]): Promise<void> {
    const replaced = await this.pg.withTransaction(async (tx) => {
      const owner = await tx.row<{ account_id: string }>("SELECT account_id FROM workers.scripts WHERE name = $1", [script.name]);
      if (owner && owner.account_id !== script.accountId) throw WorkersErrors.nameTaken(script.name);
      const old = await this.row(tx, script.accountId, script.name, true);
      const r = toRow(script, old?.created_on ?? script.createdOn);
      try {
        await tx.execute(
          `INSERT INTO workers.scripts (${SCRIPT_COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)
           ON CONFLICT (account_id, name) DO UPDATE SET version_id = excluded.version_id, etag = excluded.etag, main_module = excluded.main_module,
             compatibility_date = excluded.compatibility_date, compatibility_flags = excluded.compatibility_flags, bindings = excluded.bindings,
             modules = excluded.modules, modified_on = excluded.modified_on`,
          [
            r.account_id,
            r.name,
            r.version_id,
            r.etag,
            r.main_module,
            r.compatibility_date,
            r.compatibility_flags,
            r.bindings,
            r.modules,
            r.created_on,
            r.modified_on,
          ],
        );
      } catch (err) {
        // Another account took the name on another node between the check and the insert.
        if (isCode(err, "23505")) throw WorkersErrors.nameTaken(script.name);
        throw err;
      }
      for (const s of secrets) await this.putSecret(tx, script.accountId, script.name, s.name, s.text);
      await this.announce(tx, script.name);
      return old ? toRecord(old).modules : [];
    });
    const kept = new Set(script.modules.map((m) => m.contentId));
    await this.deleteModules(replaced.filter((m) => !kept.has(m.contentId)));
  }

  async delete(accountId: string, name: string): Promise<boolean> {
    const removed = await this.pg.withTransaction(async (tx) => {
      const old = await tx.row<{ modules: string }>("DELETE FROM workers.scripts WHERE account_id = $1 AND name = $2 RETURNING modules", [accountId, name]);
      if (old) await this.announce(tx, name);
      return old && (JSON.parse(old.modules) as ModuleRef[]);
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

  async changeSecret(accountId: string, script: string, name: string, value: string | undefined, versionId: string): Promise<boolean> {
    return this.pg.withTransaction(async (tx) => {
      if (!(await this.row(tx, accountId, script, true))) throw WorkersErrors.scriptNotFound();
      const changed =
        value === undefined
          ? (await tx.execute("DELETE FROM workers.secrets WHERE account_id = $1 AND script = $2 AND name = $3", [accountId, script, name])) > 0
          : (await this.putSecret(tx, accountId, script, name, value)) > 0;
      if (changed) {
        await tx.execute("UPDATE workers.scripts SET version_id = $1, modified_on = $2 WHERE account_id = $3 AND name = $4", [
          versionId,
          new Date().toISOString(),
          accountId,
          script,
        ]);
        await this.announce(tx, script);
      }
      return changed;
    });
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
