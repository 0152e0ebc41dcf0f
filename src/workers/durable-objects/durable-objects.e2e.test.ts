import assert from "node:assert/strict";
import { existsSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { startTestPlatform, type TestPlatform } from "../../core/testing/platform.js";
import { createAccount, hit, startPlatform, uploadScript } from "../testing/helpers.js";
import { eventually } from "../../core/testing/eventually.js";
import { withTempDir } from "../../core/testing/temp-dir.js";

/**
 * Durable Objects end to end: the real platform, `edgecli deploy` with a wrangler config, workerd running the objects
 * on disk, requests through the edge port.
 */

let p: TestPlatform;
before(async () => {
  p = await startPlatform();
});
after(async () => {
  await p?.dispose();
});

/** Counter: SQLite-backed (SQL API). Notes: KV-style storage and an alarm. `extra` is appended (e.g. a third class). */
const worker = (version: string, { withNotes = true } = {}) => `import { DurableObject } from "cloudflare:workers";
export class Counter extends DurableObject {
  constructor(ctx, env) {
    super(ctx, env);
    this.instance = crypto.randomUUID();
    ctx.storage.sql.exec("CREATE TABLE IF NOT EXISTS counts (k TEXT PRIMARY KEY, v INTEGER NOT NULL)");
  }
  increment(by = 1) {
    this.ctx.storage.sql.exec("INSERT INTO counts VALUES ('n', ?) ON CONFLICT (k) DO UPDATE SET v = v + excluded.v", by);
    return this.ctx.storage.sql.exec("SELECT v FROM counts WHERE k = 'n'").one().v;
  }
  peek() {
    return this.ctx.storage.sql.exec("SELECT v FROM counts WHERE k = 'n'").toArray()[0]?.v ?? 0;
  }
  async fetch(req) {
    return Response.json({ n: this.increment(), instance: this.instance, sql: typeof this.ctx.storage.sql === "object" });
  }
}
${
  withNotes
    ? `export class Notes extends DurableObject {
  async fetch(req) {
    const url = new URL(req.url);
    if (url.pathname === "/put") { await this.ctx.storage.put("note", url.searchParams.get("v")); return new Response("ok"); }
    if (url.pathname === "/hold") {
      this.me ??= crypto.randomUUID();
      await this.ctx.storage.put("holder", this.me);
      await new Promise((resolve) => setTimeout(resolve, Number(url.searchParams.get("ms"))));
      await this.ctx.storage.delete("holder");
      return new Response("released");
    }
    if (url.pathname === "/who") {
      this.me ??= crypto.randomUUID();
      return Response.json({ holder: (await this.ctx.storage.get("holder")) ?? null, me: this.me });
    }
    if (url.pathname === "/alarm") { await this.ctx.storage.setAlarm(Date.now() + Number(url.searchParams.get("in"))); return new Response("set"); }
    let sql = true;
    try { this.ctx.storage.sql.exec("SELECT 1"); } catch { sql = false; }
    return Response.json({ note: (await this.ctx.storage.get("note")) ?? null, fired: (await this.ctx.storage.get("fired")) ?? null, sql });
  }
  async alarm() { await this.ctx.storage.put("fired", "yes"); }
}`
    : ""
}
export default {
  async fetch(req, env) {
    const url = new URL(req.url);
    const [, kind, name, ...rest] = url.pathname.split("/");
    if (kind === "version") return new Response(${JSON.stringify(version)});
    if (kind === "counter") return env.COUNTER.get(env.COUNTER.idFromName(name)).fetch(req);
    if (kind === "rpc") return Response.json(await env.COUNTER.get(env.COUNTER.idFromName(name)).increment(Number(url.searchParams.get("by"))));
    if (kind === "id") return new Response(env.COUNTER.idFromName(name).toString());
    if (kind === "byid") return Response.json(await env.COUNTER.get(env.COUNTER.idFromString(name)).peek());
    if (kind === "unique") {
      const id = env.COUNTER.newUniqueId();
      await env.COUNTER.get(id).increment(7);
      return Response.json({ id: id.toString(), n: await env.COUNTER.get(env.COUNTER.idFromString(id.toString())).peek() });
    }
    if (kind === "notes") return env.NOTES.get(env.NOTES.idFromName(name)).fetch(new Request("http://do/" + rest.join("/") + url.search));
    return new Response("not found", { status: 404 });
  },
};
`;

const bindings = (notes = true) =>
  `[[durable_objects.bindings]]\nname = "COUNTER"\nclass_name = "Counter"\n` +
  (notes ? `[[durable_objects.bindings]]\nname = "NOTES"\nclass_name = "Notes"\n` : "");
/** Both classes bound, as an upload's metadata names them. */
const BOTH = [
  { type: "durable_object_namespace", name: "COUNTER", class_name: "Counter" },
  { type: "durable_object_namespace", name: "NOTES", class_name: "Notes" },
];
const V1 = `[[migrations]]\ntag = "v1"\nnew_sqlite_classes = ["Counter"]\nnew_classes = ["Notes"]\n`;
const toml = (rest: string) => `name = "counters"\nmain = "index.js"\ncompatibility_date = "2024-09-01"\n${rest}`;

/** Runs `edgecli deploy` on a project made of `files`. */
function deploy(files: Record<string, string>) {
  return withTempDirResult("do-deploy-", async (dir) => {
    for (const [name, text] of Object.entries(files)) writeFileSync(join(dir, name), text);
    return p.cli(["deploy"], { cwd: dir });
  });
}

async function withTempDirResult<T>(prefix: string, fn: (dir: string) => Promise<T>): Promise<T> {
  let out: T | undefined;
  await withTempDir(prefix, async (dir) => {
    out = await fn(dir);
  });
  return out!;
}

const json = async (path: string) => {
  const r = await hit(p, "counters", path);
  assert.equal(r.status, 200, r.text);
  return JSON.parse(r.text);
};
const namespacesOf = async (accountId = p.accountId, headers?: Record<string, string>) =>
  p.api("GET", `/accounts/${accountId}/workers/durable_objects/namespaces`, undefined, headers);

test("edgecli deploy with [[durable_objects.bindings]] and [[migrations]]: SQL and KV storage, idFromName, RPC, ids, an alarm", async () => {
  const r = await deploy({ "wrangler.toml": toml(bindings() + V1), "index.js": worker("one") });
  assert.equal(r.code, 0, r.stderr);
  assert.match(r.stdout, /- Durable Objects:\n {2}- COUNTER: Counter\n {2}- NOTES: Notes/);

  // idFromName: the same object for every request; another name is another object.
  assert.equal((await json("/counter/a")).n, 1);
  assert.equal((await json("/counter/a")).n, 2);
  assert.equal((await json("/counter/b")).n, 1);
  // One instance per id: concurrent requests reach the same instance and no increment is lost.
  const burst = await Promise.all(Array.from({ length: 10 }, () => json("/counter/c")));
  assert.deepEqual(
    burst.map((b) => b.n).sort((x, y) => x - y),
    [1, 2, 3, 4, 5, 6, 7, 8, 9, 10],
  );
  assert.equal(new Set(burst.map((b) => b.instance)).size, 1, "one instance answered them all");
  // An RPC method through the stub, then idFromString of the name's id reaches the same object.
  assert.equal(await json("/rpc/a?by=5"), 7);
  const id = (await hit(p, "counters", "/id/a")).text;
  assert.match(id, /^[0-9a-f]{64}$/);
  assert.equal(await json(`/byid/${id}`), 7);
  assert.equal((await hit(p, "counters", "/byid/0123")).status, 500, "an id that is not this namespace's is refused by workerd");
  const unique = await json("/unique/x");
  assert.equal(unique.n, 7);

  // KV-style storage; the SQL API only on the SQLite-backed class.
  assert.equal((await hit(p, "counters", "/notes/n1/put?v=hello")).text, "ok");
  assert.deepEqual(await json("/notes/n1/get"), { note: "hello", fired: null, sql: false });
  assert.equal((await json("/counter/sqlcheck")).sql, true);

  // An alarm fires (its handler writes storage).
  assert.equal((await hit(p, "counters", "/notes/n2/alarm?in=300")).text, "set");
  await eventually(async () => (await json("/notes/n2/get")).fired === "yes", "the alarm to fire");

  // The v4 API lists the namespaces and the objects with stored data.
  const list = await namespacesOf();
  assert.equal(list.status, 200);
  const byClass = new Map((list.body as any).result.map((n: any) => [n.class, n]));
  assert.deepEqual([...byClass.keys()].sort(), ["Counter", "Notes"]);
  const counterNs = byClass.get("Counter") as any;
  assert.deepEqual(
    { name: counterNs.name, script: counterNs.script, use_sqlite: counterNs.use_sqlite },
    { name: "counters_Counter", script: "counters", use_sqlite: true },
  );
  assert.equal((byClass.get("Notes") as any).use_sqlite, false);
  assert.match(counterNs.id, /^[0-9a-f]{32}$/);
  const objects = await p.api("GET", `/accounts/${p.accountId}/workers/durable_objects/namespaces/${counterNs.id}/objects?limit=10`);
  assert.equal(objects.status, 200);
  const ids = (objects.body as any).result.map((o: any) => o.id);
  assert.ok(ids.includes(id), "the object of idFromName('a') is listed");
  assert.ok(ids.includes(unique.id), "the newUniqueId object is listed");
  assert.equal((await p.api("GET", `/accounts/${p.accountId}/workers/durable_objects/namespaces/${"0".repeat(32)}/objects`)).status, 404);

  // wrangler reads the Worker's migration tag to send only later migrations.
  const service = await p.api("GET", `/accounts/${p.accountId}/workers/services/counters`);
  assert.equal((service.body as any).result.default_environment.script.migration_tag, "v1");
});

/** The processes running a version of `script` on its objects' directory (its config.capnp; the check run uses check.capnp). */
function processesOnStorage(script: string): number {
  const dir = join(p.stateDir, "workers-run", script);
  let n = 0;
  for (const pid of readdirSync("/proc").filter((d) => /^\d+$/.test(d))) {
    try {
      const argv = readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0");
      if (argv.some((a) => a.startsWith(dir) && a.endsWith("/config.capnp"))) n++;
    } catch {
      // gone meanwhile
    }
  }
  return n;
}

test("during a redeploy an object never has two instances: the new version starts once the old one's requests finished", async () => {
  // A request holding the object is in flight on the old version while the new one is deployed.
  const hold = hit(p, "counters", "/notes/h/hold?ms=6000");
  await eventually(async () => (await json("/notes/h/who")).holder !== null, "the object to be held");
  let deploying = true;
  let most = 0;
  const sample = (async () => {
    while (deploying) {
      most = Math.max(most, processesOnStorage("counters"));
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  })();
  // Through the API (the CLI's start and bundling could outlast the request in flight).
  const r = await uploadScript(p, "counters", worker("one-b"), { bindings: BOTH });
  deploying = false;
  await sample;
  assert.equal(r.status, 200, JSON.stringify(r.body));
  assert.equal(most, 1, "never two processes on the objects' directory");
  assert.equal((await hold).text, "released", "the request in flight on the old version finished");
  assert.equal((await hit(p, "counters", "/version/x")).text, "one-b");
  assert.equal((await json("/notes/h/who")).holder, null);
});

test("a redeploy keeps every object's state; one dropping a class without deleted_classes, or binding a class without a migration, is refused", async () => {
  // Requests keep coming during the redeploy: each is answered (by the old version or, after a short wait, the
  // new one), and the object counts every one of them once.
  let deploying = true;
  const answers: number[] = [];
  const traffic = (async () => {
    while (deploying) {
      const h = await hit(p, "counters", "/rpc/during?by=1");
      assert.equal(h.status, 200, h.text);
      answers.push(Number(h.text));
    }
  })();
  const r = await deploy({ "wrangler.toml": toml(bindings() + V1), "index.js": worker("two") });
  deploying = false;
  await traffic;
  assert.equal(r.code, 0, r.stderr);
  assert.equal((await hit(p, "counters", "/version/x")).text, "two");
  assert.deepEqual(
    answers,
    answers.map((_, i) => i + 1),
    "every request during the redeploy counted once, in order",
  );
  assert.equal(await json("/rpc/a?by=1"), 8, "the counter kept its value across the redeploy");
  assert.equal((await json("/notes/n1/get")).note, "hello");

  const dropped = await deploy({ "wrangler.toml": toml(bindings(false) + V1), "index.js": worker("three", { withNotes: false }) });
  assert.equal(dropped.code, 1);
  assert.match(dropped.stderr, /does not export the Durable Object class Notes.*deleted_classes/s);
  assert.equal((await hit(p, "counters", "/version/x")).text, "two", "the previous version still serves");
  assert.equal((await json("/notes/n1/get")).note, "hello");

  const unbound = await deploy({
    "wrangler.toml": toml(bindings() + `[[durable_objects.bindings]]\nname = "OTHER"\nclass_name = "Other"\n` + V1),
    "index.js": worker("four"),
  });
  assert.equal(unbound.code, 1);
  assert.match(unbound.stderr, /Binding OTHER: class Other has no Durable Object namespace.*new_sqlite_classes/s);

  const wrongTag = await uploadScript(p, "counters", worker("five"), {
    bindings: [{ type: "durable_object_namespace", name: "COUNTER", class_name: "Counter" }],
    migrations: { old_tag: "v0", new_tag: "v2", steps: [{ new_classes: ["Extra"] }] },
  });
  assert.equal(wrongTag.status, 400);
  assert.match(wrongTag.body.errors[0].message, /migrations are at tag "v1", but the upload's old_tag is "v0"/);
  assert.equal((await hit(p, "counters", "/version/x")).text, "two");
});

test("deleted_classes removes the class, its namespace and its objects' storage", async () => {
  const notes = ((await namespacesOf()).body as any).result.find((n: any) => n.class === "Notes");
  const storage = join(p.stateDir, "durable-objects", p.accountId, "counters");
  const before = readdirSync(storage);
  assert.equal(before.length, 2, "one directory per namespace");
  const r = await deploy({
    "wrangler.toml": toml(bindings(false) + V1 + `[[migrations]]\ntag = "v2"\ndeleted_classes = ["Notes"]\n`),
    "index.js": worker("six", { withNotes: false }),
  });
  assert.equal(r.code, 0, r.stderr);
  assert.deepEqual(
    ((await namespacesOf()).body as any).result.map((n: any) => n.class),
    ["Counter"],
  );
  assert.equal((await p.api("GET", `/accounts/${p.accountId}/workers/durable_objects/namespaces/${notes.id}/objects`)).status, 404);
  assert.equal(readdirSync(storage).length, 1, "the deleted class's directory is gone");
  assert.equal(await json("/rpc/a?by=1"), 9, "the other class kept its objects");
  const service = await p.api("GET", `/accounts/${p.accountId}/workers/services/counters`);
  assert.equal((service.body as any).result.default_environment.script.migration_tag, "v2");
});

test("another account cannot bind this account's class, sees none of its namespaces, and its own objects live apart", async () => {
  const b = await createAccount(p, "do-other");
  const asB = { accountId: b, headers: p.keyHeaders() };
  const counterOnly = `[{"type":"durable_object_namespace","name":"COUNTER","class_name":"Counter"}]`;
  const steal = await uploadScript(
    p,
    "thief",
    `export default { async fetch(req, env) { return new Response(String(await env.COUNTER.get(env.COUNTER.idFromName("a")).increment(1))); } };`,
    { bindings: [{ type: "durable_object_namespace", name: "COUNTER", class_name: "Counter", script_name: "counters" }] },
    asB,
  );
  assert.equal(steal.status, 400);
  // Answered as for a name no Worker of B has: A's Workers are never looked at.
  assert.match(steal.body.errors[0].message, /Binding COUNTER: script_name "counters" names no Worker of this account with a Durable Object class Counter/);
  assert.equal(((await namespacesOf(b, p.keyHeaders())).body as any).result.length, 0);
  const counterNs = ((await namespacesOf()).body as any).result[0];
  assert.equal((await p.api("GET", `/accounts/${b}/workers/durable_objects/namespaces/${counterNs.id}/objects`, undefined, p.keyHeaders())).status, 404);

  // B's own Counter class, same class and object names: its own namespace, its own directory, its own count.
  const own = await uploadScript(
    p,
    "counters-b",
    worker("b", { withNotes: false }),
    {
      bindings: JSON.parse(counterOnly),
      migrations: { new_tag: "v1", steps: [{ new_sqlite_classes: ["Counter"] }] },
    },
    asB,
  );
  assert.equal(own.status, 200, JSON.stringify(own.body));
  const r = await hit(p, "counters-b", "/rpc/a?by=1");
  assert.equal(r.text, "1", "B's object 'a' is not A's");
  assert.ok(existsSync(join(p.stateDir, "durable-objects", b, "counters-b")));
  assert.equal(await json("/rpc/a?by=0"), 9, "A's object is untouched");
});

test("script_name naming another Worker of the account: refused saying why, nothing deployed", async () => {
  const binder = (className: string, script: string) =>
    uploadScript(p, "binder", `export default { async fetch() { return new Response("binder"); } };`, {
      bindings: [{ type: "durable_object_namespace", name: "COUNTER", class_name: className, script_name: script }],
    });
  // "counters" exports Counter and has its namespace: binding it from another Worker is not supported, and the answer says why.
  const other = await binder("Counter", "counters");
  assert.equal(other.status, 400);
  assert.match(
    other.body.errors[0].message,
    /Binding COUNTER: class Counter belongs to another Worker \(script_name "counters"\).*not supported.*own workerd process.*one instance/s,
  );
  // A class that Worker does not have, and a Worker that does not exist.
  const noClass = await binder("Nope", "counters");
  assert.equal(noClass.status, 400);
  assert.match(noClass.body.errors[0].message, /script_name "counters" names no Worker of this account with a Durable Object class Nope/);
  const noScript = await binder("Counter", "nowhere");
  assert.equal(noScript.status, 400);
  assert.match(noScript.body.errors[0].message, /script_name "nowhere" names no Worker of this account with a Durable Object class Counter/);
  assert.equal((await hit(p, "binder", "/")).status, 404, "nothing was deployed");
  assert.equal(await json("/rpc/a?by=0"), 9, "the exporting Worker is untouched");
});

test("objects and a pending alarm survive a platform restart", async () => {
  const both = [
    { type: "durable_object_namespace", name: "COUNTER", class_name: "Counter" },
    { type: "durable_object_namespace", name: "NOTES", class_name: "Notes" },
  ];
  const up = await uploadScript(p, "alarms", worker("alarms"), {
    bindings: both,
    migrations: { new_tag: "v1", steps: [{ new_sqlite_classes: ["Counter"], new_classes: ["Notes"] }] },
  });
  assert.equal(up.status, 200, JSON.stringify(up.body));
  assert.equal((await hit(p, "alarms", "/notes/z/alarm?in=4000")).text, "set");
  assert.equal(JSON.parse((await hit(p, "alarms", "/notes/z/get")).text).fired, null);
  assert.equal((await hit(p, "counters", "/rpc/r?by=3")).text, "3");
  await p.stop();
  const again = await startTestPlatform({ stateDir: p.stateDir, args: ["--dns-port", "0"] });
  try {
    assert.equal((await hit(again, "counters", "/rpc/r?by=1")).text, "4");
    assert.equal((await hit(again, "counters", "/rpc/a?by=0")).text, "9");
    await eventually(async () => JSON.parse((await hit(again, "alarms", "/notes/z/get")).text).fired === "yes", "the alarm set before the restart to fire");
  } finally {
    await again.stop();
  }
});
