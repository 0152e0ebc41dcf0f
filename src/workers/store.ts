import type { ContentStore } from "../core/content/store.js";
import type { Db, Migration } from "../core/db/sqlite.js";
import type { SecretBox } from "../core/secret-box.js";
import type { Binding, ModuleKind, ModuleRef, RunnableScript, ScriptRecord } from "./model.js";

export const workersMigrations: readonly Migration[] = [
  `CREATE TABLE scripts (
     account_id TEXT NOT NULL,
     name TEXT NOT NULL,
     version_id TEXT NOT NULL,
     etag TEXT NOT NULL,
     main_module TEXT NOT NULL,
     compatibility_date TEXT NOT NULL,
     compatibility_flags TEXT NOT NULL,
     bindings TEXT NOT NULL,
     modules TEXT NOT NULL,
     created_on TEXT NOT NULL,
     modified_on TEXT NOT NULL,
     PRIMARY KEY (account_id, name)
   );
   -- The Host <script>.<workers domain> names no account, so a script name is unique platform-wide.
   CREATE UNIQUE INDEX scripts_name ON scripts(name);
   CREATE TABLE secrets (
     account_id TEXT NOT NULL,
     script TEXT NOT NULL,
     name TEXT NOT NULL,
     value TEXT NOT NULL,
     PRIMARY KEY (account_id, script, name),
     FOREIGN KEY (account_id, script) REFERENCES scripts(account_id, name) ON DELETE CASCADE
   );`,
  // Values are sealed (SecretBox) from now on; rows written before are sealed when the store opens.
  `ALTER TABLE secrets ADD COLUMN sealed INTEGER NOT NULL DEFAULT 0;`,
];

interface ScriptRow {
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

const toRecord = (r: ScriptRow): ScriptRecord => ({
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

/** What a sealed secret is bound to: the row it belongs in, so a value cannot be moved to another script. */
const secretContext = (accountId: string, script: string, name: string) => `${accountId}/${script}/${name}`;

/**
 * Worker scripts and their secrets. Module bytes live in the content store (written before the row that
 * names them). Secret values must be readable again (workerd needs them in clear), so they are sealed with the
 * platform's secrets key, not hashed; no method that feeds an API answer returns them (see `secretNames`).
 */
export class WorkersStore {
  private readonly q;

  constructor(
    private readonly db: Db,
    private readonly content: ContentStore,
    private readonly box: SecretBox,
  ) {
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
      for (const r of rows) update.run(this.box.seal(r.value, secretContext(r.account_id, r.script, r.name)), r.account_id, r.script, r.name);
    })();
    // The pages holding the clear values are overwritten in the main file now, not at some later checkpoint.
    this.db.pragma("wal_checkpoint(TRUNCATE)");
  }

  /** A key that cannot open the stored secrets stops the start with the reason, not a script that fails later. */
  private checkKey(): void {
    const one = this.db
      .prepare<[], { account_id: string; script: string; name: string; value: string }>("SELECT account_id, script, name, value FROM secrets LIMIT 1")
      .get();
    if (one) this.box.open(one.value, secretContext(one.account_id, one.script, one.name));
  }

  private sealed(accountId: string, script: string, name: string, value: string): string {
    return this.box.seal(value, secretContext(accountId, script, name));
  }

  get(accountId: string, name: string): ScriptRecord | undefined {
    const r = this.q.get.get(accountId, name);
    return r && toRecord(r);
  }

  /** The script a Host name points at, whichever account owns it. */
  byName(name: string): ScriptRecord | undefined {
    const r = this.q.byName.get(name);
    return r && toRecord(r);
  }

  list(accountId: string): ScriptRecord[] {
    return this.q.list.all(accountId).map(toRecord);
  }

  all(): ScriptRecord[] {
    return this.q.all.all().map(toRecord);
  }

  async writeModule(content: Buffer): Promise<{ contentId: string; size: number }> {
    const c = await this.content.put(content);
    return { contentId: c.id, size: c.size };
  }

  /** Stores a new version with the secrets given (others are kept); returns the modules it replaced so they can be removed. */
  save(script: ScriptRecord, secrets: { name: string; text: string }[]): ModuleRef[] {
    return this.db.transaction(() => {
      const old = this.get(script.accountId, script.name);
      this.q.upsert.run({
        account_id: script.accountId,
        name: script.name,
        version_id: script.versionId,
        etag: script.etag,
        main_module: script.mainModule,
        compatibility_date: script.compatibilityDate,
        compatibility_flags: JSON.stringify(script.compatibilityFlags),
        bindings: JSON.stringify(script.bindings),
        modules: JSON.stringify(script.modules),
        created_on: old?.createdOn ?? script.createdOn,
        modified_on: script.modifiedOn,
      });
      for (const s of secrets) this.q.putSecret.run(script.accountId, script.name, s.name, this.sealed(script.accountId, script.name, s.name, s.text));
      return old?.modules ?? [];
    })();
  }

  /** Removes a script and its secrets; returns its modules for the caller to delete after the commit. */
  delete(accountId: string, name: string): ModuleRef[] | undefined {
    return this.db.transaction(() => {
      const old = this.get(accountId, name);
      if (!old) return undefined;
      this.q.del.run(accountId, name);
      return old.modules;
    })();
  }

  deleteModules(modules: readonly ModuleRef[]): void {
    for (const m of modules) this.content.deleteSync(m.contentId);
  }

  /** Removes module files no script names (left by a crash between writing modules and committing the row). */
  gcContent(graceMs?: number): Promise<number> {
    const live = new Set(this.all().flatMap((s) => s.modules.map((m) => m.contentId)));
    return this.content.gc((id) => live.has(id), graceMs);
  }

  secretNames(accountId: string, script: string): string[] {
    return this.q.secretNames.all(accountId, script).map((r) => r.name);
  }

  hasSecret(accountId: string, script: string, name: string): boolean {
    return this.secretNames(accountId, script).includes(name);
  }

  /** Sets or removes one secret and gives the script a new version id, in one transaction. */
  changeSecret(accountId: string, script: string, name: string, value: string | undefined, versionId: string): boolean {
    return this.db.transaction(() => {
      const changed =
        value === undefined
          ? this.q.delSecret.run(accountId, script, name).changes > 0
          : this.q.putSecret.run(accountId, script, name, this.sealed(accountId, script, name, value)).changes > 0;
      if (changed) this.q.touch.run(versionId, new Date().toISOString(), accountId, script);
      return changed;
    })();
  }

  /** Secret values, for the runtime only (never for an API answer). */
  secretValues(accountId: string, script: string): Map<string, string> {
    return new Map(this.q.secrets.all(accountId, script).map((r) => [r.name, this.box.open(r.value, secretContext(accountId, script, r.name))]));
  }

  /** Everything workerd needs to run the script; `secrets` replaces the stored values when given (a change not yet committed). */
  async runnable(script: ScriptRecord, secrets = this.secretValues(script.accountId, script.name)): Promise<RunnableScript> {
    const modules = await Promise.all(
      script.modules.map(async (m) => ({ name: m.name, kind: m.kind as ModuleKind, content: await this.content.readAll(m.contentId) })),
    );
    return { script, modules, secrets: [...secrets].map(([name, text]) => ({ name, text })) };
  }
}
