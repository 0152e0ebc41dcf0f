import { createHash, randomUUID } from "node:crypto";
import type { Logger } from "../core/logger.js";
import type { ParsedUpload } from "./api/upload.js";
import type { BindingBackendName } from "./bindings/binding-type.js";
import { resolveInherits } from "./bindings/inherit.js";
import { typeOf, type Binding } from "./bindings/registry.js";
import type { WorkerAssets } from "./assets/assets.js";
import type { DurableObjects } from "./durable-objects/durable-objects.js";
import type { RuntimeDurableObjects } from "./durable-objects/workerd.js";
import { WorkersErrors } from "./errors.js";
import type { RunnableScript, WorkersRuntime } from "./runtime/runtime.js";
import { WorkerdStartError } from "./runtime/workerd-process.js";
import {
  primaryOf,
  type ChangeAuthor,
  type DeploymentRecord,
  type ModuleRef,
  type ModuleSource,
  type ScriptRecord,
  type VersionMeta,
  type VersionRecord,
  type WorkersStore,
} from "./store.js";

/** Answers whether a backend's resource (a bucket by name, a namespace by id) exists in an account. */
export type ResourceExists = (backend: BindingBackendName, accountId: string, resource: string) => Promise<boolean>;

const SCRIPT_NAME_RE = /^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$/;

/** What the deployer needs of Queues about a script: whether it consumes a queue, and forgetting it when it is deleted. */
export interface ScriptConsumers {
  isConsumer(accountId: string, name: string): Promise<boolean>;
  /** Removes the script's consumers (the Worker is deleted). */
  scriptRemoved(accountId: string, name: string): Promise<void>;
}

/** What runs of a script on this node. */
interface Running {
  /** The versions it runs and their shares (`runningKey`), which `sync` compares with the store's current deployment. */
  deployment: string;
  /** Whether it runs as a queue consumer (with the queue dispatcher, see runtime/queue-dispatch.ts). */
  queueConsumer: boolean;
}

/** The second version of a gradual deployment, with its share of the traffic (the primary version takes the rest). */
interface SecondVersion {
  version: VersionRecord;
  percentage: number;
}

/** What tells apart what a script runs: its primary version, and the second one of a split with its share. */
const runningKey = (primaryId: string, second?: SecondVersion) => (second ? `${primaryId} ${second.version.id}@${second.percentage}` : primaryId);

/** Compatibility date used when an upload names none (wrangler's draft worker for `secret put` sends none). */
const DEFAULT_COMPATIBILITY_DATE = "2024-09-01";

/**
 * Every change to what runs goes through here: the new version is started on workerd first, and only once
 * it listens is it committed to the store (so a script workerd refuses leaves nothing behind and the old
 * version serving). Changes to one script are serialised.
 */
export class ScriptDeployer {
  private readonly locks = new Map<string, Promise<unknown>>();
  /** The version each script runs on this node's workerd, which `sync` compares with the store's (and its consumers). */
  private readonly running = new Map<string, Running>();

  constructor(
    private readonly store: WorkersStore,
    private readonly runtime: WorkersRuntime,
    private readonly exists: ResourceExists,
    private readonly log: Logger,
    private readonly objects?: DurableObjects,
    private readonly assets?: WorkerAssets,
    private readonly consumers?: ScriptConsumers,
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

  private async checkTargets(accountId: string, bindings: readonly Binding[]): Promise<void> {
    for (const b of bindings) {
      const target = typeOf(b).target;
      if (target && !(await this.exists(target.backend, accountId, target.resource(b)))) throw target.missing(b);
    }
  }

  private async checkName(accountId: string, name: string): Promise<void> {
    if (!SCRIPT_NAME_RE.test(name)) throw WorkersErrors.invalidName(name);
    const owner = await this.store.byName(name);
    if (owner && owner.accountId !== accountId) throw WorkersErrors.nameTaken(name);
  }

  /**
   * Runs `script` (the primary version), and `second` beside it during a gradual deployment. Both run with the Worker's
   * secrets as they are now (their values are not kept per version), as a forced deploy of an older version does.
   */
  private async start(
    script: ScriptRecord,
    modules: ModuleSource[],
    secrets: Map<string, string>,
    durableObjects?: RuntimeDurableObjects,
    second?: SecondVersion,
  ): Promise<void> {
    const queueConsumer = (await this.consumers?.isConsumer(script.accountId, script.name)) === true;
    const secretList = [...secrets].map(([name, text]) => ({ name, text }));
    const run: RunnableScript = { script, modules, secrets: secretList, durableObjects, queueConsumer };
    const secondRun = second && {
      run: {
        script: { ...script, ...versionContent(second.version), versionId: second.version.id },
        modules: await this.store.readModules(second.version.modules),
        secrets: secretList,
        queueConsumer,
      },
      percentage: second.percentage,
    };
    await this.assets?.prepare(script.accountId, script.name, script.versionId);
    try {
      await this.runtime.deploy(run, secondRun);
    } catch (err) {
      if (err instanceof WorkerdStartError) throw WorkersErrors.failedToStart(err.message);
      throw err;
    }
    this.running.set(script.name, { deployment: runningKey(script.versionId, second), queueConsumer });
  }

  /**
   * The second version of the script's current deployment (the newest), when it is a gradual one whose primary version
   * is the live record's; undefined otherwise (one version at 100%).
   */
  private async secondOf(script: ScriptRecord): Promise<SecondVersion | undefined> {
    const [current] = await this.store.deployments(script.accountId, script.name);
    if (!current || current.versions.length < 2 || primaryOf(current).versionId !== script.versionId) return undefined;
    const other = current.versions.find((v) => v.versionId !== script.versionId)!;
    const version = await this.store.version(script.accountId, script.name, other.versionId);
    return version && { version, percentage: other.percentage };
  }

  /**
   * Commits a change whose version already runs here; if the commit fails (PostgreSQL unreachable, a name taken on
   * another node meanwhile), this node goes back to running what the store holds, as far as it can read it.
   */
  private async commit(name: string, write: () => Promise<unknown>): Promise<void> {
    try {
      await write();
    } catch (err) {
      await this.follow(name).catch((e: unknown) => this.log.warn({ script: name, err: (e as Error).message }, "could not go back to the stored version"));
      throw err;
    }
  }

  /**
   * Makes this node run what the store holds for script `name`, whoever changed it (another node deployed, set a
   * secret or deleted it): the stored version starts beside the running one and takes over its traffic once it
   * listens, as a deploy does, so no request is dropped; a deleted script stops. The version already running is
   * left alone, unless the script became or ceased to be a queue consumer: then it starts again with or without the
   * queue dispatcher (and workerd's --experimental), the same way. Serialised with this node's own changes to the script.
   */
  sync(name: string): Promise<void> {
    return this.serial(name, () => this.follow(name));
  }

  /** Syncs every script the store holds or this node runs (at start, and after notices may have been lost); a script workerd refuses is logged and skipped. */
  async syncAll(): Promise<void> {
    const names = new Set([...(await this.store.all()).map((s) => s.name), ...this.running.keys()]);
    await Promise.all(
      [...names].map((name) =>
        this.sync(name).catch((err: unknown) => this.log.error({ script: name, err: (err as Error).message }, "stored worker script failed to start")),
      ),
    );
  }

  private async follow(name: string): Promise<void> {
    for (let attempt = 1; ; attempt++) {
      const script = await this.store.byName(name);
      if (!script) {
        if (this.running.delete(name)) await this.runtime.remove(name);
        return;
      }
      const running = this.running.get(name);
      const queueConsumer = (await this.consumers?.isConsumer(script.accountId, name)) === true;
      try {
        const second = await this.secondOf(script);
        // The version (or the two of a split, with the same shares) runs already, unless it must start again: to become
        // or stop being a queue consumer, or to attach or detach the tail worker.
        if (running?.deployment === runningKey(script.versionId, second) && running.queueConsumer === queueConsumer && !this.runtime.tailStale(name)) return;
        const objects = await this.objects?.runtimeOf(script.accountId, name);
        await this.start(script, await this.store.readModules(script.modules), await this.store.secretValues(script.accountId, name), objects, second);
        return;
      } catch (err) {
        // A newer version committed meanwhile may have removed this one's modules: read the record again.
        if (attempt >= 3 || (await this.store.byName(name))?.versionId === script.versionId) throw err;
      }
    }
  }

  /** Writes an upload's modules and makes the record of a new version of them (not saved yet). */
  private async newVersion(accountId: string, name: string, up: ParsedUpload): Promise<ScriptRecord> {
    const hash = createHash("sha256");
    const modules: ModuleRef[] = [];
    for (const m of up.modules) {
      hash.update(m.name).update("\0").update(m.content);
      modules.push({ name: m.name, kind: m.kind, ...(await this.store.writeModule(m.content)) });
    }
    const now = new Date().toISOString();
    return {
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
  }

  /** Refuses bindings named like one of the Worker's secrets (workerd would be given the name twice). */
  private static checkSecretClash(bindings: readonly Binding[], secretNames: Iterable<string>): void {
    const names = new Set(secretNames);
    const clash = bindings.find((b) => names.has(b.name));
    if (clash) throw WorkersErrors.bindingNameIsSecret(clash.name);
  }

  /**
   * Whether a Worker keeps one version only: one with static assets (they are the Worker's, not a version's, so two
   * versions would serve one version's files), or one an upload would give assets.
   */
  private async oneVersionOnly(accountId: string, name: string, up?: ParsedUpload): Promise<boolean> {
    if (up?.assets !== undefined) return true;
    return (await this.assets?.has(accountId, name)) === true;
  }

  /**
   * Checks that `bindings` (a kept version's, or a version upload's) fit the Worker's Durable Object namespaces as they
   * are now, and answers what the version runs with. A version upload may not carry migrations (as hosted, 10211):
   * a migration is applied once, by a deploy, for every version at once.
   */
  private async objectsFor(accountId: string, name: string, bindings: readonly Binding[], migrations?: ParsedUpload["migrations"]) {
    if (migrations !== undefined) throw WorkersErrors.migrationInVersionUpload();
    if (!this.objects || !(await this.objects.used(accountId, name, bindings))) return undefined;
    return (await this.objects.plan(accountId, name, bindings, undefined)).runtime;
  }

  /** Uploads a version and deploys it at once (`PUT …/scripts/{name}`; the first version of a Worker). */
  upload(accountId: string, name: string, up: ParsedUpload, meta?: VersionMeta): Promise<ScriptRecord> {
    return this.serial(name, async () => this.uploadNow(accountId, name, await this.withInherited(accountId, name, up), meta));
  }

  /**
   * The upload with its `inherit` bindings replaced by the bindings they name in the Worker's newest version (or the
   * one their `version_id` names); read under the script's lock, so no other upload comes between.
   */
  private async withInherited(accountId: string, name: string, up: ParsedUpload): Promise<ParsedUpload> {
    if (up.inherits.length === 0) return up;
    const exists = (await this.store.get(accountId, name)) !== undefined;
    const secretNames = exists ? await this.store.secretNames(accountId, name) : [];
    const inherited = await resolveInherits(
      up.inherits,
      async (versionId) => {
        if (!exists) return undefined;
        const version = versionId ? await this.store.version(accountId, name, versionId) : (await this.store.versions(accountId, name, 1, 1)).items[0];
        return version && { bindings: version.bindings, secretNames };
      },
      up.strictInherit,
    );
    return { ...up, bindings: [...up.bindings, ...inherited], inherits: [] };
  }

  /**
   * Uploads a version without deploying it (`POST …/versions`), unless the Worker does not exist yet (its first
   * version goes live, there being nothing else to serve) or keeps one version only (see oneVersionOnly): then it is
   * deployed at once, and `deployed` says so. A version of a Worker with Durable Objects is checked against its
   * namespaces, and started with its objects in memory (it never opens theirs); one carrying migrations is refused.
   */
  uploadVersion(accountId: string, name: string, upload: ParsedUpload, meta: VersionMeta): Promise<{ version: VersionRecord; deployed: boolean }> {
    return this.serial(name, async () => {
      const up = await this.withInherited(accountId, name, upload);
      const live = await this.store.get(accountId, name);
      if (!live || (await this.oneVersionOnly(accountId, name, up))) {
        const s = await this.uploadNow(accountId, name, up, meta);
        return { version: (await this.store.version(accountId, name, s.versionId))!, deployed: true };
      }
      // Secret values go with the deploy that sets them here (the Worker's secrets are not kept per version).
      if (up.secrets.length > 0) throw WorkersErrors.versionUploadNotDeployable("secret values (set them with wrangler secret put)");
      const durableObjects = await this.objectsFor(accountId, name, up.bindings, up.migrations);
      await this.checkTargets(accountId, up.bindings);
      const secrets = await this.store.secretValues(accountId, name);
      ScriptDeployer.checkSecretClash(up.bindings, secrets.keys());
      const script = await this.newVersion(accountId, name, up);
      try {
        // As hosted: a version workerd refuses is not kept (its error is the answer).
        // Its objects, if any, are kept in memory for the check (ScriptRuntime.check): it never opens theirs.
        const run: RunnableScript = {
          script,
          modules: up.modules,
          secrets: [...secrets].map(([n, text]) => ({ name: n, text })),
          queueConsumer: false,
          ...(durableObjects ? { durableObjects } : {}),
        };
        await this.runtime.check(run).catch((err: unknown) => {
          throw err instanceof WorkerdStartError ? WorkersErrors.failedToStart(err.message) : err;
        });
        return { version: await this.store.addVersion(script, meta), deployed: false };
      } catch (err) {
        await this.store.deleteModules(script.modules);
        throw err;
      }
    });
  }

  /**
   * Makes the kept versions `deployment.versions` live: one at 100%, or two sharing the traffic (a gradual deployment;
   * the script record takes the content of its `primaryOf`). What is not running yet starts beside what runs and takes
   * over its traffic (for a Worker with Durable Objects, after it: ScriptRuntime.handOver), then the deployment is
   * committed. Refused for a Worker that keeps one version only (unless it names the live version alone), for two
   * versions of a Worker with Durable Objects, for a version that does not fit the Worker's Durable Object namespaces
   * as they are now, when a binding's target no longer exists, and (unless `force`) when the Worker's secrets changed
   * since one of the versions was made (it would run with today's values: they are not kept per version).
   */
  deployVersion(accountId: string, name: string, deployment: DeploymentRecord, force: boolean): Promise<ScriptRecord> {
    return this.serial(name, async () => {
      const live = await this.store.get(accountId, name);
      if (!live) throw WorkersErrors.scriptNotFound();
      const versions = new Map<string, VersionRecord>();
      for (const { versionId } of deployment.versions) {
        const v = await this.store.version(accountId, name, versionId);
        if (!v) throw WorkersErrors.versionNotFound(versionId);
        versions.set(versionId, v);
      }
      const primary = versions.get(primaryOf(deployment).versionId)!;
      const otherShare = deployment.versions.find((d) => d.versionId !== primary.id);
      const second = otherShare && { version: versions.get(otherShare.versionId)!, percentage: otherShare.percentage };
      if ((primary.id !== live.versionId || second) && (await this.oneVersionOnly(accountId, name))) throw WorkersErrors.versionSwitchWithAssets();
      // Two versions would each run the objects in their own workerd, and nothing here keeps an object on one of them.
      if (second && (await this.objects?.used(accountId, name)) === true) throw WorkersErrors.splitWithDurableObjects();
      // Each version must fit the namespaces as they are now (a version from before a migration may not); one that
      // no longer exports a class whose objects exist is refused when it starts (entry-module.ts).
      for (const v of versions.values()) await this.objectsFor(accountId, name, v.bindings);
      const changed = new Set<string>();
      for (const v of versions.values()) for (const secret of await this.store.secretsChangedSince(accountId, name, v.id)) changed.add(secret);
      if (!force && changed.size > 0) throw WorkersErrors.secretsChanged([...changed].sort());
      const secrets = await this.store.secretValues(accountId, name);
      for (const v of versions.values()) {
        await this.checkTargets(accountId, v.bindings);
        ScriptDeployer.checkSecretClash(v.bindings, secrets.keys());
      }
      if (this.running.get(name)?.deployment !== runningKey(primary.id, second)) {
        const script: ScriptRecord = { ...live, ...versionContent(primary), versionId: primary.id, modifiedOn: deployment.createdOn };
        await this.start(script, await this.store.readModules(primary.modules), secrets, await this.objects?.runtimeOf(accountId, name), second);
      }
      let deployed: ScriptRecord | undefined;
      await this.commit(name, async () => (deployed = await this.store.deploy(accountId, name, deployment, force)));
      return deployed!;
    });
  }

  private async uploadNow(accountId: string, name: string, up: ParsedUpload, meta?: VersionMeta): Promise<ScriptRecord> {
    await this.checkName(accountId, name);
    await this.checkTargets(accountId, up.bindings);
    const secrets = await this.store.secretValues(accountId, name);
    for (const s of up.secrets) secrets.set(s.name, s.text);
    ScriptDeployer.checkSecretClash(up.bindings, secrets.keys());
    const objects = await this.objects?.plan(accountId, name, up.bindings, up.migrations);
    const assets = await this.assets?.plan(accountId, name, up.assets, up.keepAssets, up.bindings);
    const script = await this.newVersion(accountId, name, up);
    const modules = script.modules;
    // Assets first: the new version reads them once it runs (the old one keeps those it has read).
    await assets?.commit();
    try {
      await this.start(script, up.modules, secrets, objects?.runtime);
    } catch (err) {
      await this.store.deleteModules(modules);
      await assets?.rollback();
      throw err;
    }
    // Namespaces first: a uniqueKey the running version uses is never lost (its objects would be unreachable).
    await objects?.commit();
    await this.commit(name, () => this.store.save(script, up.secrets, meta));
    return (await this.store.get(accountId, name))!;
  }

  remove(accountId: string, name: string): Promise<void> {
    return this.serial(name, async () => {
      if (!(await this.store.get(accountId, name))) throw WorkersErrors.scriptNotFound();
      await this.runtime.remove(name);
      this.running.delete(name);
      await this.commit(name, () => this.store.delete(accountId, name));
      await this.objects?.removeScript(accountId, name);
      await this.assets?.remove(accountId, name);
      await this.consumers?.scriptRemoved(accountId, name);
    });
  }

  /** Sets (text) or removes (undefined) a secret; the script restarts with it before the change is committed. */
  changeSecret(accountId: string, name: string, secret: string, text: string | undefined, author?: ChangeAuthor): Promise<void> {
    return this.serial(name, async () => {
      const script = await this.store.get(accountId, name);
      if (!script) throw WorkersErrors.scriptNotFound();
      // As hosted: the new version is made of the live one, which during a split is only one of the two that run.
      if (await this.secondOf(script)) throw WorkersErrors.secretChangeDuringSplit();
      const secrets = await this.store.secretValues(accountId, name);
      if (text === undefined) {
        if (!secrets.delete(secret)) throw WorkersErrors.secretNotFound(secret);
      } else {
        const binding = script.bindings.find((b) => b.name === secret);
        if (binding) throw WorkersErrors.secretNameIsBinding(secret, binding.type);
        secrets.set(secret, text);
      }
      const versionId = randomUUID();
      const objects = await this.objects?.runtimeOf(accountId, name);
      await this.start({ ...script, versionId }, await this.store.readModules(script.modules), secrets, objects);
      await this.commit(name, () => this.store.changeSecret(accountId, name, secret, text, versionId, author));
    });
  }
}

/** The part of a script record a version carries. */
const versionContent = (v: VersionRecord) => ({
  etag: v.etag,
  mainModule: v.mainModule,
  compatibilityDate: v.compatibilityDate,
  compatibilityFlags: v.compatibilityFlags,
  bindings: v.bindings,
  modules: v.modules,
});
