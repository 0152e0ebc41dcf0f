import type { ContentStore } from "../core/content/store.js";
import type { Db } from "../core/db/sqlite.js";
import type { SecretBox } from "../core/secret-box.js";
import { WorkersErrors } from "./errors.js";
import { ModuleContent } from "./module-content.js";
import { liveModuleIds, toRecord, toRow, type ScriptRow } from "./rows.js";
import { secretSealContext, type ModuleRef, type Schedule, type ScriptRecord, type ScriptSchedule, type WorkersStore } from "./store.js";

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
      secretNames: db.prepare<[string, string], { name: string }>("SELECT name FROM secrets WHERE account_id = ? AND script = ? ORDER BY name"),
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
    return this.gcModules(liveModuleIds(this.q.all.all()), graceMs);
  }

  async save(script: ScriptRecord, secrets: readonly { name: string; text: string }[]): Promise<void> {
    const replaced = this.db.transaction(() => {
      const owner = this.q.byName.get(script.name);
      if (owner && owner.account_id !== script.accountId) throw WorkersErrors.nameTaken(script.name);
      const old = this.getSync(script.accountId, script.name);
      this.q.upsert.run(toRow(script, old?.createdOn ?? script.createdOn));
      for (const s of secrets) this.q.putSecret.run(script.accountId, script.name, s.name, this.sealed(script.accountId, script.name, s.name, s.text));
      return old?.modules ?? [];
    })();
    const kept = new Set(script.modules.map((m) => m.contentId));
    await this.deleteModules(replaced.filter((m) => !kept.has(m.contentId)));
  }

  async delete(accountId: string, name: string): Promise<boolean> {
    const removed = this.db.transaction(() => {
      const old = this.getSync(accountId, name);
      if (old) this.q.del.run(accountId, name);
      return old?.modules;
    })();
    if (!removed) return false;
    await this.deleteModules(removed);
    return true;
  }

  async secretNames(accountId: string, script: string): Promise<string[]> {
    return this.q.secretNames.all(accountId, script).map((r) => r.name);
  }

  async secretValues(accountId: string, script: string): Promise<Map<string, string>> {
    return new Map(this.q.secrets.all(accountId, script).map((r) => [r.name, this.box.open(r.value, secretSealContext(accountId, script, r.name))]));
  }

  async changeSecret(accountId: string, script: string, name: string, value: string | undefined, versionId: string): Promise<boolean> {
    return this.db.transaction(() => {
      if (!this.q.get.get(accountId, script)) throw WorkersErrors.scriptNotFound();
      const changed =
        value === undefined
          ? this.q.delSecret.run(accountId, script, name).changes > 0
          : this.q.putSecret.run(accountId, script, name, this.sealed(accountId, script, name, value)).changes > 0;
      if (changed) this.q.touch.run(versionId, new Date().toISOString(), accountId, script);
      return changed;
    })();
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
