import { mkdirSync, readdirSync, rmSync } from "node:fs";
import { join } from "node:path";
import type { Logger } from "../../core/logger.js";
import type { Binding } from "../bindings/registry.js";
import type { DurableObjectNamespaceBinding } from "./namespace-binding.js";
import { DurableObjectsErrors } from "./errors.js";
import { applyMigrations, type UploadMigrations } from "./migrations.js";
import type { DurableObjectsStore, NamespaceRecord, ScriptDurableObjects } from "./store.js";
import type { RuntimeDurableObjects } from "./workerd.js";

/** What an upload does to a script's Durable Objects, once its new version runs. */
export interface DurableObjectsPlan {
  /** What the new version runs with (undefined: no Durable Objects). */
  runtime?: RuntimeDurableObjects;
  /** Saves the namespaces and tag, then deletes the storage of the classes the migrations deleted. */
  commit(): Promise<void>;
}

const isDurableObjectBinding = (b: Binding): b is DurableObjectNamespaceBinding => b.type === "durable_object_namespace";

/** An object's storage file in a namespace directory: `<64 hex id>.sqlite` (workerd's layout). */
const OBJECT_FILE = /^([0-9a-f]{64})\.sqlite$/;

/**
 * The Durable Objects of every Worker: namespaces created and removed by migrations (kept in the store), their
 * objects run by workerd in the Worker's own process and stored under `<root>/<account>/<script>/<uniqueKey>/`
 * (root is `<state>/durable-objects`): accounts and scripts never share a directory.
 */
export class DurableObjects {
  constructor(
    private readonly store: DurableObjectsStore | undefined,
    /** `<state>/durable-objects`. */
    private readonly root: string,
    private readonly log: Logger,
  ) {}

  /** The directory of one script's objects. Account ids and script names are checked before they get here (hex, [a-z0-9-]). */
  private storageDir(accountId: string, script: string): string {
    return join(this.root, accountId, script);
  }

  private runtime(accountId: string, script: string, state: ScriptDurableObjects): RuntimeDurableObjects | undefined {
    if (state.namespaces.length === 0) return undefined;
    const storageDir = this.storageDir(accountId, script);
    mkdirSync(storageDir, { recursive: true, mode: 0o700 });
    return {
      storageDir,
      namespaces: state.namespaces.map((n) => ({ className: n.className, uniqueKey: n.uniqueKey, enableSql: n.useSqlite })),
    };
  }

  /**
   * Checks an upload's Durable Object bindings and migrations against what the script has, and says what the new
   * version runs with. Refused: a class bound from another Worker (see otherScriptRefusal), a binding to a class without a namespace, a
   * migration that does not apply (see applyMigrations); on several nodes, anything to do with Durable Objects.
   */
  async plan(accountId: string, script: string, bindings: readonly Binding[], migrations: UploadMigrations | undefined): Promise<DurableObjectsPlan> {
    const bound = bindings.filter(isDurableObjectBinding);
    if (!this.store) {
      if (bound.length > 0 || migrations) throw DurableObjectsErrors.distributed();
      return { commit: async () => undefined };
    }
    const store = this.store;
    const current = await store.ofScript(accountId, script);
    const { state, deleted } = applyMigrations(accountId, script, current, migrations);
    for (const b of bound) {
      if (b.environment !== undefined) throw DurableObjectsErrors.environment(b.name);
      if (b.script_name !== undefined && b.script_name !== script) throw await this.otherScriptRefusal(accountId, b, b.script_name);
      if (!state.namespaces.some((n) => n.className === b.class_name)) throw DurableObjectsErrors.noNamespace(b.name, b.class_name);
    }
    return {
      runtime: this.runtime(accountId, script, state),
      commit: async () => {
        if (migrations) await store.replace(accountId, script, state);
        this.removeStorage(accountId, script, deleted);
      },
    };
  }

  /**
   * Why a binding to another Worker's class is refused. Only the account's own Workers are looked at, so a Worker of
   * another account gets the same answer as a name no Worker has.
   */
  private async otherScriptRefusal(accountId: string, b: DurableObjectNamespaceBinding, exporter: string) {
    const exported = (await this.store!.ofScript(accountId, exporter)).namespaces.some((n) => n.className === b.class_name);
    return exported ? DurableObjectsErrors.otherScript(b.name, exporter, b.class_name) : DurableObjectsErrors.noClassInScript(b.name, exporter, b.class_name);
  }

  /** What a stored script runs with (at start, or when a secret changes). */
  async runtimeOf(accountId: string, script: string): Promise<RuntimeDurableObjects | undefined> {
    return this.store && this.runtime(accountId, script, await this.store.ofScript(accountId, script));
  }

  /** Whether a Worker has Durable Object classes, or an upload would give it some (its versions then cannot be switched). */
  async used(accountId: string, script: string, bindings: readonly Binding[] = [], migrations?: UploadMigrations): Promise<boolean> {
    if (migrations || bindings.some(isDurableObjectBinding)) return true;
    return this.store !== undefined && (await this.store.ofScript(accountId, script)).namespaces.length > 0;
  }

  async migrationTag(accountId: string, script: string): Promise<string | undefined> {
    return this.store && (await this.store.ofScript(accountId, script)).migrationTag;
  }

  /** Removes a deleted Worker's namespaces and all its objects' storage. */
  async removeScript(accountId: string, script: string): Promise<void> {
    if (!this.store) return;
    await this.store.deleteScript(accountId, script);
    rmSync(this.storageDir(accountId, script), { recursive: true, force: true });
  }

  private removeStorage(accountId: string, script: string, namespaces: readonly NamespaceRecord[]): void {
    for (const n of namespaces) {
      rmSync(join(this.storageDir(accountId, script), n.uniqueKey), { recursive: true, force: true });
      this.log.info({ script, class: n.className, namespace: n.id }, "deleted a Durable Object class and its objects");
    }
  }

  async list(accountId: string): Promise<NamespaceRecord[]> {
    return this.store ? this.store.list(accountId) : [];
  }

  async get(accountId: string, id: string): Promise<NamespaceRecord | undefined> {
    return this.store?.get(accountId, id);
  }

  /** The ids of a namespace's objects that have stored data, in order, after `cursor`, at most `limit`. */
  objects(ns: NamespaceRecord, cursor: string | undefined, limit: number): { ids: string[]; more: boolean } {
    let names: string[];
    try {
      names = readdirSync(join(this.storageDir(ns.accountId, ns.script), ns.uniqueKey));
    } catch {
      return { ids: [], more: false };
    }
    const ids = names
      .map((f) => OBJECT_FILE.exec(f)?.[1])
      .filter((id): id is string => id !== undefined && (cursor === undefined || id > cursor))
      .sort();
    return { ids: ids.slice(0, limit), more: ids.length > limit };
  }
}
