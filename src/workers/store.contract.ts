import assert from "node:assert/strict";
import { EdgeError } from "../core/errors.js";
import { storeContract } from "../core/testing/contract.js";
import { WorkersCodes } from "./errors.js";
import { VersionLimits, type DeploymentRecord, type ModuleRef, type ScriptRecord, type VersionMeta, type WorkersStore } from "./store.js";

const A = "a".repeat(32);
const B = "b".repeat(32);

/** A time later than the one before: ISO strings of the same millisecond would compare equal. */
let clock = Date.parse("2025-01-01T00:00:00.000Z");
const later = () => new Date((clock += 1000)).toISOString();

/** Writes `modules` (name → text) and returns the refs a record names them by. */
async function modulesOf(store: WorkersStore, modules: Record<string, string>): Promise<ModuleRef[]> {
  const refs: ModuleRef[] = [];
  for (const [name, text] of Object.entries(modules)) refs.push({ name, kind: "esModule", ...(await store.writeModule(Buffer.from(text))) });
  return refs;
}

async function version(store: WorkersStore, accountId: string, name: string, modules: Record<string, string>, extra: Partial<ScriptRecord> = {}) {
  const now = later();
  const script: ScriptRecord = {
    accountId,
    name,
    versionId: `v-${now}`,
    etag: `etag-${now}`,
    mainModule: Object.keys(modules)[0],
    compatibilityDate: "2024-09-01",
    compatibilityFlags: [],
    bindings: [],
    modules: await modulesOf(store, modules),
    createdOn: now,
    modifiedOn: now,
    ...extra,
  };
  return script;
}

const refusedWith = (code: number) => (e: unknown) => e instanceof EdgeError && e.errors[0].code === code;

/** What every WorkersStore does, whatever keeps the data (run by sqlite-store.test.ts). */
export const describeWorkersStore = storeContract<WorkersStore>("WorkersStore", (it) => {
  it("keeps a script with its bindings and flags as given; finds it by account and name, by name alone, and in its account's list by name", async (store) => {
    const bindings: ScriptRecord["bindings"] = [
      { type: "r2_bucket", name: "B", bucket_name: "photos" },
      { type: "plain_text", name: "GREETING", text: 'a "quoted" é' },
      { type: "kv_namespace", name: "K", namespace_id: "0".repeat(32) },
    ];
    const zeta = await version(store, A, "zeta", { "index.js": "z" }, { bindings, compatibilityFlags: ["nodejs_compat"] });
    const alpha = await version(store, A, "alpha", { "index.js": "a" });
    const other = await version(store, B, "other", { "index.js": "o" });
    for (const s of [zeta, alpha, other]) await store.save(s, []);
    assert.deepEqual(await store.get(A, "zeta"), zeta);
    assert.deepEqual((await store.get(A, "zeta"))?.bindings, bindings, "bindings in the order given");
    assert.deepEqual(await store.byName("other"), other);
    assert.equal(await store.get(A, "other"), undefined, "a name in another account is not found in this one");
    assert.equal(await store.byName("missing"), undefined);
    assert.deepEqual(
      (await store.list(A)).map((s) => s.name),
      ["alpha", "zeta"],
    );
    assert.deepEqual(
      (await store.list(B)).map((s) => s.name),
      ["other"],
    );
    assert.deepEqual(
      (await store.all()).map((s) => `${s.accountId}/${s.name}`),
      [`${A}/alpha`, `${A}/zeta`, `${B}/other`],
    );
  });

  it("a new version replaces the record (version id, etag, modules, modified time) and keeps the creation time; the replaced version is kept with its bytes", async (store) => {
    const first = await version(store, A, "app", { "index.js": "one", "lib.js": "lib" });
    await store.save(first, []);
    const second = await version(store, A, "app", { "index.js": "two" });
    await store.save(second, []);
    const now = (await store.get(A, "app"))!;
    assert.equal(now.versionId, second.versionId);
    assert.equal(now.etag, second.etag);
    assert.equal(now.modifiedOn, second.modifiedOn);
    assert.equal(now.createdOn, first.createdOn);
    assert.deepEqual(
      (await store.readModules(now.modules)).map((m) => [m.name, m.kind, m.content.toString()]),
      [["index.js", "esModule", "two"]],
    );
    assert.equal((await store.readModules(first.modules)).length, 2, "the replaced version's bytes stay: it is kept");
    const kept = await store.versions(A, "app", 1, 10);
    assert.deepEqual(
      kept.items.map((v) => [v.id, v.number, v.triggeredBy]),
      [
        [second.versionId, 2, "upload"],
        [first.versionId, 1, "upload"],
      ],
    );
    assert.equal(kept.total, 2);
    assert.deepEqual(
      (await store.deployments(A, "app")).map((d) => d.versions),
      [[{ versionId: second.versionId, percentage: 100 }], [{ versionId: first.versionId, percentage: 100 }]],
      "each save is a deployment at 100%, newest first",
    );
  });

  const wrangler: VersionMeta = { triggeredBy: "upload", source: "wrangler", author: "dev@example.com", message: "try it", tag: "v2" };
  const deploymentOf = (versionId: string, extra: Partial<DeploymentRecord> = {}): DeploymentRecord => ({
    id: `d-${later()}`,
    createdOn: later(),
    source: "wrangler",
    versions: [{ versionId, percentage: 100 }],
    ...extra,
  });

  it("versions: one added is kept without going live; a deployment makes it live and a later one goes back; paged newest first", async (store) => {
    const first = await version(store, A, "app", { "index.js": "one" }, { bindings: [{ type: "plain_text", name: "V", text: "1" }] });
    await store.save(first, []);
    const second = await version(store, A, "app", { "index.js": "two" }, { compatibilityFlags: ["nodejs_compat"] });
    const added = await store.addVersion(second, wrangler);
    assert.deepEqual(
      { ...added, modules: undefined },
      {
        accountId: A,
        script: "app",
        id: second.versionId,
        number: 2,
        etag: second.etag,
        mainModule: "index.js",
        compatibilityDate: "2024-09-01",
        compatibilityFlags: ["nodejs_compat"],
        bindings: [],
        modules: undefined,
        secretNames: [],
        triggeredBy: "upload",
        source: "wrangler",
        author: "dev@example.com",
        message: "try it",
        tag: "v2",
        createdOn: second.modifiedOn,
      },
    );
    assert.deepEqual(await store.version(A, "app", second.versionId), added);
    assert.equal((await store.get(A, "app"))!.versionId, first.versionId, "adding a version does not deploy it");
    assert.equal((await store.deployments(A, "app")).length, 1);

    const d = deploymentOf(second.versionId, { message: "ship", author: "dev@example.com" });
    const live = await store.deploy(A, "app", d, false);
    assert.equal(live.versionId, second.versionId);
    assert.deepEqual(await store.get(A, "app"), live);
    assert.deepEqual(live.compatibilityFlags, ["nodejs_compat"]);
    assert.equal(live.createdOn, first.createdOn, "the Worker keeps its creation time");
    assert.deepEqual((await store.deployments(A, "app"))[0], d);

    const back = await store.deploy(A, "app", deploymentOf(first.versionId), false);
    assert.equal(back.versionId, first.versionId);
    assert.deepEqual(back.bindings, first.bindings, "a version goes live with its own bindings");
    assert.deepEqual(
      (await store.readModules(back.modules)).map((m) => m.content.toString()),
      ["one"],
    );

    const page2 = await store.versions(A, "app", 2, 1);
    assert.deepEqual(
      page2.items.map((v) => v.id),
      [first.versionId],
    );
    assert.equal(page2.total, 2);
    await assert.rejects(store.deploy(A, "app", deploymentOf("no-such-version"), false), refusedWith(WorkersCodes.versionNotFound));
    await assert.rejects(store.addVersion(await version(store, A, "missing", { "index.js": "m" }), wrangler), refusedWith(WorkersCodes.scriptNotFound));
    await assert.rejects(store.deploy(A, "missing", deploymentOf(first.versionId), false), refusedWith(WorkersCodes.scriptNotFound));
  });

  it("versions belong to their script and account: another account can neither see nor deploy them", async (store) => {
    const mine = await version(store, A, "mine", { "index.js": "mine" });
    await store.save(mine, []);
    const theirs = await version(store, B, "theirs", { "index.js": "theirs" });
    await store.save(theirs, []);
    await assert.rejects(store.versions(B, "mine", 1, 10), refusedWith(WorkersCodes.scriptNotFound));
    await assert.rejects(store.deployments(B, "mine"), refusedWith(WorkersCodes.scriptNotFound));
    assert.equal(await store.version(B, "mine", mine.versionId), undefined);
    assert.equal(await store.version(B, "theirs", mine.versionId), undefined);
    await assert.rejects(store.deploy(B, "theirs", deploymentOf(mine.versionId), true), refusedWith(WorkersCodes.versionNotFound));
    await assert.rejects(store.deploy(B, "mine", deploymentOf(mine.versionId), true), refusedWith(WorkersCodes.scriptNotFound));
    assert.equal((await store.get(B, "theirs"))!.versionId, theirs.versionId);
  });

  it(`keeps ${VersionLimits.versions} versions per script: the oldest go with their bytes, never the live one; deployments naming them go too`, async (store) => {
    const live = await version(store, A, "busy", { "index.js": "live" });
    await store.save(live, []);
    const second = await version(store, A, "busy", { "index.js": "second" });
    await store.addVersion(second, wrangler);
    await store.deploy(A, "busy", deploymentOf(second.versionId), false);
    const third = await version(store, A, "busy", { "index.js": "third" });
    await store.addVersion(third, wrangler);
    await store.deploy(A, "busy", deploymentOf(live.versionId), false);
    for (let i = 0; i < VersionLimits.versions - 2; i++) await store.addVersion(await version(store, A, "busy", { "index.js": `n${i}` }), wrangler);
    const { items, total } = await store.versions(A, "busy", 1, VersionLimits.versions);
    assert.equal(total, VersionLimits.versions);
    const ids = new Set(items.map((v) => v.id));
    assert.ok(ids.has(live.versionId), "the live version is kept, however old");
    assert.ok(!ids.has(second.versionId), "the oldest version that is not live is gone");
    assert.ok(ids.has(third.versionId));
    await assert.rejects(store.readModules(second.modules), "with its bytes");
    assert.equal((await store.readModules(live.modules)).length, 1);
    const deployed = (await store.deployments(A, "busy")).map((d) => d.versions[0].versionId);
    assert.deepEqual(deployed, [live.versionId, live.versionId], "the deployment of the removed version went with it");
  });

  it("a gradual deployment of two versions: the record takes the larger share (the first named on a tie); both are kept past the version limit; secrets are checked for both", async (store) => {
    const one = await version(store, A, "split", { "index.js": "one" });
    await store.save(one, [{ name: "TOKEN", text: "t-1" }]);
    const two = await version(store, A, "split", { "index.js": "two" });
    await store.addVersion(two, wrangler);
    const shares = (a: number, b: number) => [
      { versionId: one.versionId, percentage: a },
      { versionId: two.versionId, percentage: b },
    ];
    const d = deploymentOf(one.versionId, { versions: shares(30, 70) });
    assert.equal((await store.deploy(A, "split", d, false)).versionId, two.versionId);
    assert.deepEqual((await store.deployments(A, "split"))[0], d, "the deployment as given, in its order");
    assert.equal((await store.deploy(A, "split", deploymentOf(one.versionId, { versions: shares(50, 50) }), false)).versionId, one.versionId);
    await assert.rejects(
      store.deploy(A, "split", deploymentOf(one.versionId, { versions: [shares(50, 50)[0], { versionId: "no-such-version", percentage: 50 }] }), false),
      refusedWith(WorkersCodes.versionNotFound),
    );
    // A secret set again since both were made: deploying them needs force; the record is left as it was until then.
    assert.equal(await store.changeSecret(A, "split", "TOKEN", "t-2", "v-split-secret"), true);
    await assert.rejects(store.deploy(A, "split", deploymentOf(one.versionId, { versions: shares(10, 90) }), false), refusedWith(WorkersCodes.secretsChanged));
    assert.equal((await store.get(A, "split"))!.versionId, "v-split-secret");
    assert.equal((await store.deploy(A, "split", deploymentOf(one.versionId, { versions: shares(50, 50) }), true)).versionId, one.versionId);

    for (let i = 0; i < VersionLimits.versions; i++) await store.addVersion(await version(store, A, "split", { "index.js": `n${i}` }), wrangler);
    const { items, total } = await store.versions(A, "split", 1, VersionLimits.versions);
    assert.equal(total, VersionLimits.versions);
    const ids = new Set(items.map((v) => v.id));
    assert.ok(ids.has(one.versionId) && ids.has(two.versionId), "both versions of the current deployment are kept, however old");
    assert.equal((await store.readModules(two.modules))[0].content.toString(), "two");
    assert.deepEqual((await store.deployments(A, "split"))[0].versions, shares(50, 50));
  });

  it("secrets across versions: a change is a new version deployed at once; deploying a version made with other secrets needs force", async (store) => {
    const first = await version(store, A, "app", { "index.js": "x" });
    await store.save(first, [{ name: "TOKEN", text: "t-1" }]);
    const second = await version(store, A, "app", { "index.js": "y" });
    await store.addVersion(second, wrangler);
    assert.deepEqual(await store.secretsChangedSince(A, "app", first.versionId), []);
    assert.equal(await store.changeSecret(A, "app", "TOKEN", "t-2", "v-secret", { source: "wrangler", author: "dev@example.com" }), true);
    const made = (await store.version(A, "app", "v-secret"))!;
    assert.deepEqual([made.triggeredBy, made.etag, made.secretNames, made.author], ["secret", first.etag, ["TOKEN"], "dev@example.com"]);
    const [latest] = await store.deployments(A, "app");
    assert.deepEqual([latest.triggeredBy, latest.versions], ["secret", [{ versionId: "v-secret", percentage: 100 }]]);
    assert.deepEqual(await store.secretsChangedSince(A, "app", first.versionId), ["TOKEN"], "set again since");
    assert.deepEqual(await store.secretsChangedSince(A, "app", "v-secret"), []);
    await assert.rejects(store.deploy(A, "app", deploymentOf(second.versionId), false), (e: unknown) => {
      assert.ok(e instanceof EdgeError && e.errors[0].code === WorkersCodes.secretsChanged);
      assert.match(e.errors[0].message, /The following secrets have changed: TOKEN$/);
      assert.ok(!e.errors[0].message.includes("t-2") && !e.errors[0].message.includes("t-1"), "never a value");
      return true;
    });
    assert.equal((await store.get(A, "app"))!.versionId, "v-secret", "a refused deployment changes nothing");
    assert.equal((await store.deploy(A, "app", deploymentOf(second.versionId), true)).versionId, second.versionId);
    assert.equal((await store.secretValues(A, "app")).get("TOKEN"), "t-2", "the Worker's secrets stay as they are");
    await assert.rejects(store.secretsChangedSince(A, "app", "nope"), refusedWith(WorkersCodes.versionNotFound));
  });

  it("a script's tags are set and read in order, kept across uploads, per account, and refused for a missing script", async (store) => {
    await store.save(await version(store, A, "tagged", { "index.js": "v1" }), []);
    assert.deepEqual(await store.tags(A, "tagged"), []);
    await store.setTags(A, "tagged", ["cf:service=app", "cf:environment=staging", "team-a"]);
    await store.save(await version(store, A, "tagged", { "index.js": "v2" }), []);
    assert.deepEqual(await store.tags(A, "tagged"), ["cf:service=app", "cf:environment=staging", "team-a"]);
    await assert.rejects(store.tags(B, "tagged"), refusedWith(WorkersCodes.scriptNotFound));
    await assert.rejects(store.setTags(B, "tagged", ["x"]), refusedWith(WorkersCodes.scriptNotFound));
    await store.setTags(A, "tagged", []);
    assert.deepEqual(await store.tags(A, "tagged"), []);
  });

  it("a script name belongs to one account on the whole platform: saving it for another is refused and changes nothing", async (store) => {
    const mine = await version(store, A, "taken", { "index.js": "mine" });
    await store.save(mine, []);
    const theirs = await version(store, B, "taken", { "index.js": "theirs" });
    await assert.rejects(store.save(theirs, [{ name: "S", text: "x" }]), refusedWith(WorkersCodes.nameTaken));
    assert.deepEqual(await store.byName("taken"), mine);
    assert.equal(await store.get(B, "taken"), undefined);
    assert.deepEqual(await store.secretNames(B, "taken"), []);
  });

  it("module bytes round-trip byte for byte; bytes no record names are removed by deleteModules, and by gcContent once past the grace time", async (store) => {
    const bytes = Buffer.from([0, 1, 2, 255, 0x22, 0x5c]);
    const [loose] = await modulesOf(store, { "loose.js": "never saved" });
    const saved = await version(store, A, "kept", { "index.js": "kept" });
    saved.modules.push({ name: "data.bin", kind: "data", ...(await store.writeModule(bytes)) });
    await store.save(saved, []);
    const read = await store.readModules(saved.modules);
    assert.deepEqual(
      read.map((m) => [m.name, m.kind]),
      [
        ["index.js", "esModule"],
        ["data.bin", "data"],
      ],
    );
    assert.deepEqual(read[1].content, bytes);
    assert.equal(read[1].content.length, saved.modules[1].size);

    const [abandoned] = await modulesOf(store, { "abandoned.js": "upload that did not start" });
    await store.deleteModules([abandoned]);
    await assert.rejects(store.readModules([abandoned]));

    assert.equal(await store.gcContent(60 * 60 * 1000), 0, "nothing is old enough yet");
    await new Promise((resolve) => setTimeout(resolve, 5));
    assert.equal(await store.gcContent(0), 1, "only the module no record names");
    await assert.rejects(store.readModules([loose]));
    assert.equal((await store.readModules(saved.modules)).length, 2);
  });

  it("secrets: saved with a version, set, replaced and removed one by one; each change gives the script the new version id; names apart from values", async (store) => {
    const app = await version(store, A, "app", { "index.js": "x" });
    await store.save(app, [
      { name: "TOKEN", text: "t-1" },
      { name: "API_KEY", text: "k-1" },
    ]);
    assert.deepEqual(await store.secretNames(A, "app"), ["API_KEY", "TOKEN"]);
    assert.deepEqual(
      [...(await store.secretValues(A, "app"))],
      [
        ["API_KEY", "k-1"],
        ["TOKEN", "t-1"],
      ],
    );

    assert.equal(await store.changeSecret(A, "app", "TOKEN", 't-2 "é"\n', "v-set"), true);
    assert.equal((await store.get(A, "app"))!.versionId, "v-set");
    assert.equal((await store.secretValues(A, "app")).get("TOKEN"), 't-2 "é"\n');

    assert.equal(await store.changeSecret(A, "app", "API_KEY", undefined, "v-del"), true);
    assert.equal((await store.get(A, "app"))!.versionId, "v-del");
    assert.deepEqual(await store.secretNames(A, "app"), ["TOKEN"]);
    assert.equal(await store.changeSecret(A, "app", "API_KEY", undefined, "v-noop"), false, "removing a missing secret changes nothing");
    assert.equal((await store.get(A, "app"))!.versionId, "v-del");

    // A redeploy that names no secrets keeps them; one that names a secret replaces that one.
    await store.save(await version(store, A, "app", { "index.js": "y" }), [{ name: "NEW", text: "n-1" }]);
    assert.deepEqual(await store.secretNames(A, "app"), ["NEW", "TOKEN"]);
    await assert.rejects(store.changeSecret(A, "missing", "X", "y", "v"), refusedWith(WorkersCodes.scriptNotFound));
  });

  it("secrets belong to their script: another script or account sees none of them", async (store) => {
    await store.save(await version(store, A, "one", { "index.js": "1" }), [{ name: "S", text: "one's" }]);
    await store.save(await version(store, A, "two", { "index.js": "2" }), []);
    await store.save(await version(store, B, "three", { "index.js": "3" }), [{ name: "S", text: "three's" }]);
    assert.deepEqual(await store.secretNames(A, "two"), []);
    assert.equal((await store.secretValues(A, "two")).size, 0);
    assert.equal((await store.secretValues(A, "one")).get("S"), "one's");
    assert.equal((await store.secretValues(B, "three")).get("S"), "three's");
    assert.deepEqual(await store.secretNames(B, "one"), [], "the same script name in another account is another script");
  });

  it("deleting a script removes its record, its secrets and its module bytes, and frees its name; deleting a missing one answers false", async (store) => {
    const app = await version(store, A, "doomed", { "index.js": "bye" });
    await store.save(app, [{ name: "S", text: "v" }]);
    const kept = await version(store, A, "doomed", { "index.js": "not deployed" });
    await store.addVersion(kept, wrangler);
    assert.equal(await store.delete(B, "doomed"), false, "another account cannot delete it");
    assert.equal(await store.delete(A, "doomed"), true);
    assert.equal(await store.get(A, "doomed"), undefined);
    assert.deepEqual(await store.secretNames(A, "doomed"), []);
    await assert.rejects(store.readModules(app.modules));
    await assert.rejects(store.readModules(kept.modules), "the bytes of its other versions too");
    assert.equal(await store.version(A, "doomed", kept.versionId), undefined);
    assert.equal(await store.delete(A, "doomed"), false);
    // A script of that name made again starts without the old secrets, and another account may take the name.
    await store.save(await version(store, B, "doomed", { "index.js": "mine now" }), []);
    assert.deepEqual(await store.secretNames(B, "doomed"), []);
  });

  it("cron triggers: set, replaced (keeping created_on and the claimed tick of those kept), kept by a new version, removed with the script; per account and limited", async (store) => {
    await assert.rejects(store.schedules(A, "ticker"), refusedWith(WorkersCodes.scriptNotFound));
    await assert.rejects(store.setSchedules(A, "ticker", ["* * * * *"], 10), refusedWith(WorkersCodes.scriptNotFound));
    await store.save(await version(store, A, "ticker", { "index.js": "t" }), []);
    assert.deepEqual(await store.schedules(A, "ticker"), []);
    const first = await store.setSchedules(A, "ticker", ["*/5 * * * *", "0 0 * * *"], 10);
    assert.deepEqual(
      first.map((s) => s.cron),
      ["*/5 * * * *", "0 0 * * *"],
    );
    const one = { accountId: A, script: "ticker", cron: "*/5 * * * *" };
    assert.equal(await store.claimTick(one, 1000), true);
    const replaced = await store.setSchedules(A, "ticker", ["*/5 * * * *", "30 1 * * *"], 10);
    assert.deepEqual(
      replaced.map((s) => s.cron),
      ["*/5 * * * *", "30 1 * * *"],
    );
    assert.equal(replaced[0].createdOn, first[0].createdOn, "a kept trigger keeps its created_on");
    assert.equal(await store.claimTick(one, 1000), false, "a kept trigger keeps its claimed tick");
    await store.save(await version(store, A, "ticker", { "index.js": "t2" }), []);
    assert.deepEqual(
      (await store.schedules(A, "ticker")).map((s) => s.cron),
      ["*/5 * * * *", "30 1 * * *"],
      "a new version keeps the triggers",
    );
    await assert.rejects(store.schedules(B, "ticker"), refusedWith(WorkersCodes.scriptNotFound), "another account does not see them");
    await assert.rejects(store.setSchedules(B, "ticker", [], 10), refusedWith(WorkersCodes.scriptNotFound));
    await store.save(await version(store, A, "other", { "index.js": "o" }), []);
    await assert.rejects(store.setSchedules(A, "other", ["1 * * * *", "2 * * * *", "3 * * * *"], 4), refusedWith(WorkersCodes.validation));
    assert.deepEqual(await store.schedules(A, "other"), [], "a refused change changes nothing");
    await store.setSchedules(A, "other", ["1 * * * *", "2 * * * *"], 4);
    assert.deepEqual(
      (await store.allSchedules()).map((s) => `${s.script} ${s.cron}`),
      ["other 1 * * * *", "other 2 * * * *", "ticker */5 * * * *", "ticker 30 1 * * *"],
    );
    await store.setSchedules(A, "other", [], 4);
    assert.deepEqual(await store.schedules(A, "other"), []);
    await store.delete(A, "ticker");
    assert.deepEqual(await store.allSchedules(), [], "deleting a script removes its triggers");
  });

  it("a tick is claimed once: a repeated or earlier claim loses, a later tick wins", async (store) => {
    await store.save(await version(store, A, "claims", { "index.js": "c" }), []);
    await store.setSchedules(A, "claims", ["* * * * *"], 10);
    const s = { accountId: A, script: "claims", cron: "* * * * *" };
    assert.equal(await store.claimTick(s, 60_000), true);
    assert.equal(await store.claimTick(s, 60_000), false);
    assert.equal(await store.claimTick(s, 0), false);
    assert.equal(await store.claimTick(s, 120_000), true);
    assert.equal(await store.claimTick({ ...s, accountId: B }, 180_000), false, "another account's claim matches nothing");
  });
});
