import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import type { TestPlatform } from "../core/testing/platform.js";
import { createAccount, hit, startPlatform, uploadScript } from "../workers/testing/helpers.js";

// A real Worker on the platform's workerd with a [[d1_databases]] binding: env.DB is workerd's own D1 API
// (cloudflare-internal:d1-api), whose calls reach the D1 area through the loopback binding server.
let p: TestPlatform;
let uuid: string;

const SCRIPT = `
export default {
  async fetch(req, env) {
    const u = new URL(req.url);
    try {
      switch (u.pathname) {
        case "/setup": {
          const r = await env.DB.exec("CREATE TABLE IF NOT EXISTS users (id INTEGER PRIMARY KEY, name TEXT NOT NULL, avatar BLOB)\\nDELETE FROM users");
          return Response.json(r);
        }
        case "/insert": {
          const r = await env.DB.prepare("INSERT INTO users (name, avatar) VALUES (?1, ?2)").bind(u.searchParams.get("name"), new Uint8Array([1, 2, 3])).run();
          return Response.json({ success: r.success, changes: r.meta.changes, last_row_id: r.meta.last_row_id });
        }
        case "/first": return Response.json(await env.DB.prepare("SELECT * FROM users WHERE id = ?").bind(Number(u.searchParams.get("id"))).first());
        case "/first-name": return Response.json(await env.DB.prepare("SELECT name FROM users ORDER BY id").first("name"));
        case "/all": {
          const r = await env.DB.prepare("SELECT id, name FROM users ORDER BY id").all();
          return Response.json({ results: r.results, success: r.success, rows_read: r.meta.rows_read });
        }
        case "/raw": return Response.json(await env.DB.prepare("SELECT id, name FROM users ORDER BY id").raw({ columnNames: true }));
        case "/batch": {
          const results = await env.DB.batch([
            env.DB.prepare("INSERT INTO users (name) VALUES (?)").bind("batch-1"),
            env.DB.prepare("INSERT INTO users (name) VALUES (?)").bind("batch-2"),
            env.DB.prepare("SELECT count(*) AS n FROM users"),
          ]);
          return Response.json(results.map((r) => r.results));
        }
        case "/failing-batch": {
          await env.DB.batch([
            env.DB.prepare("INSERT INTO users (name) VALUES (?)").bind("never-kept"),
            env.DB.prepare("INSERT INTO users (name) VALUES (NULL)"),
          ]);
          return new Response("the batch did not fail", { status: 500 });
        }
        case "/count": return Response.json(await env.DB.prepare("SELECT count(*) AS n FROM users").first("n"));
        case "/session": {
          const session = env.DB.withSession("first-primary");
          const r = await session.prepare("SELECT count(*) AS n FROM users").first("n");
          return Response.json({ n: r, bookmark: typeof session.getBookmark() });
        }
        case "/error": return Response.json(await env.DB.prepare("SELECT * FROM nowhere").all());
        case "/attach": return Response.json(await env.DB.exec("ATTACH DATABASE '/tmp/x.sqlite' AS x"));
      }
      return new Response("no route", { status: 404 });
    } catch (e) {
      return new Response(String(e.message), { status: 400 });
    }
  },
};
`;

before(async () => {
  p = await startPlatform();
  uuid = (await p.api("POST", `/accounts/${p.accountId}/d1/database`, { name: "worker-db" })).body.result.uuid;
  const up = await uploadScript(p, "d1-worker", SCRIPT, { bindings: [{ type: "d1", name: "DB", id: uuid }] });
  assert.equal(up.status, 200, JSON.stringify(up.body));
});
after(() => p?.dispose());

const json = async (path: string) => {
  const r = await hit(p, "d1-worker", path);
  assert.equal(r.status, 200, `${path}: ${r.text}`);
  return JSON.parse(r.text);
};

test("prepare/bind with first, all, run and raw; exec; batch; withSession — through workerd's D1 API", async () => {
  assert.equal((await json("/setup")).count, 2);
  assert.deepEqual(await json("/insert?name=ada"), { success: true, changes: 1, last_row_id: 1 });
  await json("/insert?name=grace");
  assert.deepEqual(await json("/first?id=1"), { id: 1, name: "ada", avatar: [1, 2, 3] });
  assert.equal(await json("/first?id=99"), null);
  assert.equal(await json("/first-name"), "ada");
  assert.deepEqual(await json("/all"), {
    results: [
      { id: 1, name: "ada" },
      { id: 2, name: "grace" },
    ],
    success: true,
    rows_read: 2,
  });
  assert.deepEqual(await json("/raw"), [
    ["id", "name"],
    [1, "ada"],
    [2, "grace"],
  ]);
  assert.deepEqual(await json("/batch"), [[], [], [{ n: 4 }]]);
  assert.deepEqual(await json("/session"), { n: 4, bookmark: "string" });
  // The script's writes are the database's: the API sees them.
  const api = await p.api("POST", `/accounts/${p.accountId}/d1/database/${uuid}/query`, { sql: "SELECT name FROM users ORDER BY id" });
  assert.deepEqual(
    api.body.result[0].results.map((r: { name: string }) => r.name),
    ["ada", "grace", "batch-1", "batch-2"],
  );
});

test("a failing statement rolls the whole batch back; errors carry SQLite's message; ATTACH is refused", async () => {
  const before = await json("/count");
  const failed = await hit(p, "d1-worker", "/failing-batch");
  assert.equal(failed.status, 400);
  assert.match(failed.text, /^D1_ERROR: NOT NULL constraint failed: users\.name: SQLITE_CONSTRAINT/);
  assert.equal(await json("/count"), before, "the batch's first insert was not kept");
  const missing = await hit(p, "d1-worker", "/error");
  assert.match(missing.text, /^D1_ERROR: no such table: nowhere: SQLITE_ERROR/);
  const attach = await hit(p, "d1-worker", "/attach");
  assert.equal(attach.status, 400);
  assert.match(attach.text, /ATTACH \(a D1 database is one file\) is not allowed in D1/);
});

test("a script can bind only a database of its own account", async () => {
  const other = await createAccount(p, "d1-intruder");
  const up = await uploadScript(p, "d1-intruder", SCRIPT, { bindings: [{ type: "d1", name: "DB", id: uuid }] }, { accountId: other, headers: p.keyHeaders() });
  assert.equal(up.status, 400);
  assert.match(up.body.errors[0].message, new RegExp(`D1 database "${uuid}" does not exist in this account`));
});
