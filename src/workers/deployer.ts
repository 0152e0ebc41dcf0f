import { createHash, randomUUID } from "node:crypto";
import { EdgeError } from "../core/errors.js";
import { DEFAULT_COMPATIBILITY_DATE, WorkerCodes, type Binding, type ModuleRef, type ScriptRecord } from "./model.js";
import type { WorkersRuntime } from "./runtime/runtime.js";
import type { WorkersStore } from "./store.js";
import type { ParsedUpload } from "./api/upload.js";
import { WorkerdStartError } from "./runtime/workerd-process.js";

/** Answers whether a binding's target exists in the account (a bucket by name, a namespace by id). */
export interface BindingTargets {
  bucketExists(accountId: string, bucketName: string): boolean;
  namespaceExists(accountId: string, namespaceId: string): boolean;
}

export const SCRIPT_NAME_RE = /^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$/;

const notFound = () => new EdgeError(404, WorkerCodes.scriptNotFound, "This Worker does not exist on your account.");

/**
 * Every change to what runs goes through here: the new version is started on workerd first, and only once
 * it listens is it committed to the store (so a script workerd refuses leaves nothing behind and the old
 * version serving). Changes to one script are serialised.
 */
export class ScriptDeployer {
  private readonly locks = new Map<string, Promise<unknown>>();

  constructor(
    private readonly store: WorkersStore,
    private readonly runtime: WorkersRuntime,
    private readonly targets: BindingTargets,
  ) {}

  private serial<T>(name: string, fn: () => Promise<T>): Promise<T> {
    const prev = this.locks.get(name) ?? Promise.resolve();
    const next = prev.then(fn, fn);
    const tail = next.catch(() => undefined);
    this.locks.set(name, tail);
    void tail.then(() => {
      if (this.locks.get(name) === tail) this.locks.delete(name);
    });
    return next;
  }

  private checkTargets(accountId: string, bindings: Binding[]): void {
    for (const b of bindings) {
      if (b.type === "r2_bucket" && !this.targets.bucketExists(accountId, b.bucket_name)) {
        throw new EdgeError(
          400,
          WorkerCodes.validation,
          `Binding ${b.name}: R2 bucket "${b.bucket_name}" does not exist in this account; create it first (edgecli r2 bucket create ${b.bucket_name})`,
        );
      }
      if (b.type === "kv_namespace" && !this.targets.namespaceExists(accountId, b.namespace_id)) {
        throw new EdgeError(400, WorkerCodes.validation, `Binding ${b.name}: KV namespace "${b.namespace_id}" does not exist in this account`);
      }
    }
  }

  private checkName(accountId: string, name: string): void {
    if (!SCRIPT_NAME_RE.test(name)) {
      throw new EdgeError(
        400,
        WorkerCodes.validation,
        `Worker name "${name}" is invalid: use 1-63 lowercase letters, digits and hyphens, not starting or ending with a hyphen`,
      );
    }
    const owner = this.store.byName(name);
    if (owner && owner.accountId !== accountId) {
      throw new EdgeError(409, WorkerCodes.nameTaken, `The Worker name "${name}" is already in use on this platform; choose another`);
    }
  }

  private async start(script: ScriptRecord, secrets: Map<string, string>): Promise<void> {
    try {
      await this.runtime.deploy(await this.store.runnable(script, secrets));
    } catch (err) {
      if (err instanceof WorkerdStartError) throw new EdgeError(400, WorkerCodes.validation, `The Worker failed to start: ${err.message}`);
      throw err;
    }
  }

  upload(accountId: string, name: string, up: ParsedUpload): Promise<ScriptRecord> {
    return this.serial(name, async () => {
      this.checkName(accountId, name);
      this.checkTargets(accountId, up.bindings);
      const secrets = this.store.secretValues(accountId, name);
      for (const s of up.secrets) secrets.set(s.name, s.text);
      const clash = up.bindings.find((b) => secrets.has(b.name));
      if (clash)
        throw new EdgeError(
          400,
          WorkerCodes.validation,
          `Binding ${clash.name}: the name is already used by a secret of this Worker; delete the secret or rename the binding`,
        );

      const hash = createHash("sha256");
      const modules: ModuleRef[] = [];
      for (const m of up.modules) {
        hash.update(m.name).update("\0").update(m.content);
        modules.push({ name: m.name, kind: m.kind, ...(await this.store.writeModule(m.content)) });
      }
      const now = new Date().toISOString();
      const script: ScriptRecord = {
        accountId,
        name,
        // A UUID, the shape wrangler expects (it prints the version id only if it looks like one).
        versionId: randomUUID(),
        etag: hash.digest("hex"),
        mainModule: up.mainModule,
        compatibilityDate: up.compatibilityDate ?? DEFAULT_COMPATIBILITY_DATE,
        compatibilityFlags: up.compatibilityFlags,
        bindings: up.bindings,
        modules,
        createdOn: now,
        modifiedOn: now,
      };
      try {
        await this.start(script, secrets);
      } catch (err) {
        this.store.deleteModules(modules);
        throw err;
      }
      const replaced = this.store.save(script, up.secrets);
      this.store.deleteModules(replaced);
      return this.store.get(accountId, name)!;
    });
  }

  remove(accountId: string, name: string): Promise<void> {
    return this.serial(name, async () => {
      if (!this.store.get(accountId, name)) throw notFound();
      await this.runtime.remove(name);
      const modules = this.store.delete(accountId, name);
      if (modules) this.store.deleteModules(modules);
    });
  }

  /** Sets (text) or removes (undefined) a secret; the script restarts with it before the change is committed. */
  changeSecret(accountId: string, name: string, secret: string, text: string | undefined): Promise<void> {
    return this.serial(name, async () => {
      const script = this.store.get(accountId, name);
      if (!script) throw notFound();
      const secrets = this.store.secretValues(accountId, name);
      if (text === undefined) {
        if (!secrets.delete(secret)) throw new EdgeError(404, WorkerCodes.secretNotFound, `This Worker has no secret named ${secret}`);
      } else {
        if (script.bindings.some((b) => b.name === secret)) {
          throw new EdgeError(
            400,
            WorkerCodes.validation,
            `${secret} is already the name of a ${script.bindings.find((b) => b.name === secret)!.type} binding of this Worker`,
          );
        }
        secrets.set(secret, text);
      }
      const versionId = randomUUID();
      await this.start({ ...script, versionId }, secrets);
      this.store.changeSecret(accountId, name, secret, text, versionId);
    });
  }
}
