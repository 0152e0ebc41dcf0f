import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { after, before, test } from "node:test";
import Cloudflare from "cloudflare";
import { request } from "undici";
import { startTestPlatform, type TestPlatform } from "../core/testing/platform.js";
import { createAccount } from "../workers/testing/helpers.js";
import { D1_LIMITS } from "./limits.js";

// The official TypeScript SDK (a real client) and plain HTTP against the D1 routes, on a real platform whose
// requests may run one second (so the hostile query below is stopped quickly).
let p: TestPlatform;
let cf: Cloudflare;
let accountB: string;
let cfB: Cloudflare;
before(async () => {
  p = await startTestPlatform({ args: ["--dns-port", "0", "--d1-query-timeout", "1"] });
  cf = new Cloudflare({ apiToken: p.token, baseURL: p.apiUrl, maxRetries: 0 });
  accountB = await createAccount(p, "d1-other");
  const tokenB = (await p.api("POST", "/user/tokens", { name: "b", permissions: ["d1_edit"], account_id: accountB }, p.keyHeaders())).body.result.value;
  cfB = new Cloudflare({ apiToken: tokenB, baseURL: p.apiUrl, maxRetries: 0 });
});
after(async () => {
  await p?.dispose();
});

const code = (expected: number) => (e: unknown) => {
  const errors = (e as { errors?: { code: number }[] }).errors;
  assert.equal(errors?.[0]?.code, expected, String(e));
  return true;
};

test("cloudflare SDK: create, list, get, query with params, raw, delete", async () => {
  const account_id = p.accountId;
  const db = await cf.d1.database.create({ account_id, name: "sdk-db" });
  assert.match(db.uuid!, /^[0-9a-f-]{36}$/);
  const listed: string[] = [];
  for await (const d of cf.d1.database.list({ account_id })) listed.push(d.name!);
  assert.ok(listed.includes("sdk-db"));

  const made = [];
  for await (const r of cf.d1.database.query(db.uuid!, {
    account_id,
    sql: "CREATE TABLE users (id INTEGER PRIMARY KEY, name TEXT, avatar BLOB); INSERT INTO users (name, avatar) VALUES ('ada', x'0102'); SELECT * FROM users",
  }))
    made.push(r);
  assert.equal(made.length, 3, "one result per statement");
  assert.deepEqual(made[2]!.results, [{ id: 1, name: "ada", avatar: [1, 2] }]);
  assert.equal(made[1]!.meta!.changes, 1);
  assert.equal(made[1]!.meta!.last_row_id, 1);
  assert.ok(made[2]!.meta!.size_after! > 0);

  const withParams = [];
  for await (const r of cf.d1.database.query(db.uuid!, { account_id, sql: "SELECT name FROM users WHERE id = ?1 OR name = ?2", params: ["1", "nobody"] }))
    withParams.push(r);
  assert.deepEqual(withParams[0]!.results, [{ name: "ada" }]);

  const raw = [];
  for await (const r of cf.d1.database.raw(db.uuid!, { account_id, sql: "SELECT id, name FROM users" })) raw.push(r);
  assert.deepEqual(raw[0]!.results, { columns: ["id", "name"], rows: [[1, "ada"]] });

  const info = await cf.d1.database.get(db.uuid!, { account_id });
  assert.equal(info.num_tables, 1);
  assert.ok(info.file_size! > 0);

  await cf.d1.database.delete(db.uuid!, { account_id });
  await assert.rejects(cf.d1.database.get(db.uuid!, { account_id }), code(7404));
});

test("account B can neither see, query nor delete account A's database", async () => {
  const db = await cf.d1.database.create({ account_id: p.accountId, name: "private" });
  await cf.d1.database.query(db.uuid!, { account_id: p.accountId, sql: "CREATE TABLE secret (v); INSERT INTO secret VALUES ('a')" });
  const seen: string[] = [];
  for await (const d of cfB.d1.database.list({ account_id: accountB })) seen.push(d.uuid!);
  assert.deepEqual(seen, []);
  await assert.rejects(cfB.d1.database.get(db.uuid!, { account_id: accountB }), code(7404));
  await assert.rejects(
    cfB.d1.database.query(db.uuid!, { account_id: accountB, sql: "SELECT * FROM secret" }).then((page) => page.getPaginatedItems()),
    code(7404),
  );
  await assert.rejects(cfB.d1.database.delete(db.uuid!, { account_id: accountB }), code(7404));
  // B's token does not reach A's account at all.
  await assert.rejects(cfB.d1.database.get(db.uuid!, { account_id: p.accountId }), (e: { status?: number }) => e.status === 403);
  const still = await p.api("POST", `/accounts/${p.accountId}/d1/database/${db.uuid}/query`, { sql: "SELECT v FROM secret" });
  assert.deepEqual(still.body.result[0].results, [{ v: "a" }]);
});

test("SQL errors carry SQLite's message in a 400; a failing statement rolls back the whole request", async () => {
  const db = (await p.api("POST", `/accounts/${p.accountId}/d1/database`, { name: "errors" })).body.result;
  const q = (body: unknown) => p.api("POST", `/accounts/${p.accountId}/d1/database/${db.uuid}/query`, body);
  const missing = await q({ sql: "SELECT * FROM nowhere" });
  assert.equal(missing.status, 400);
  assert.equal(missing.body.errors[0].code, 7500);
  assert.equal(missing.body.errors[0].message, "no such table: nowhere: SQLITE_ERROR");

  await q({ sql: "CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT NOT NULL)" });
  const failing = await q({ batch: [{ sql: "INSERT INTO t (v) VALUES (?)", params: ["kept?"] }, { sql: "INSERT INTO t (v) VALUES (NULL)" }] });
  assert.equal(failing.status, 400);
  assert.match(failing.body.errors[0].message, /NOT NULL constraint failed: t\.v/);
  assert.deepEqual((await q({ sql: "SELECT count(*) AS n FROM t" })).body.result[0].results, [{ n: 0 }], "the batch's first insert was rolled back");

  const multi = await q({ sql: "INSERT INTO t (v) VALUES ('a'); INSERT INTO t (v) VALUES (NULL)" });
  assert.equal(multi.status, 400);
  assert.deepEqual((await q({ sql: "SELECT count(*) AS n FROM t" })).body.result[0].results, [{ n: 0 }]);

  for (const [body, message] of [
    [{ sql: "SELECT ?; SELECT ?", params: [1] }, /params can only be given with a single statement/],
    [{ sql: "SELECT ?", params: [{ a: 1 }] }, /params\[0\] must be/],
    [{ sql: "  -- nothing\n ;" }, /No SQL statements detected/],
    [{ nosql: 1 }, /sql/],
  ] as const) {
    const r = await q(body);
    assert.equal(r.status, 400, JSON.stringify(body));
    assert.match(r.body.errors[0].message, message);
  }
});

test("hostile SQL: ATTACH, VACUUM INTO, file-changing PRAGMAs, extensions and BEGIN are refused; a runaway query is stopped without stalling the platform", async () => {
  const db = (await p.api("POST", `/accounts/${p.accountId}/d1/database`, { name: "hostile" })).body.result;
  const q = (sql: string) => p.api("POST", `/accounts/${p.accountId}/d1/database/${db.uuid}/query`, { sql });
  for (const [sql, refusal] of [
    [`ATTACH DATABASE '${p.stateDir}/db/core.sqlite' AS core`, /ATTACH/],
    ["/* hidden */ attach ':memory:' as m", /ATTACH/],
    ["SELECT 1; DETACH m", /DETACH/],
    ["VACUUM INTO '/tmp/copy.sqlite'", /VACUUM INTO/],
    ["PRAGMA journal_mode = DELETE", /PRAGMA journal_mode/i],
    ["PRAGMA writable_schema = ON", /PRAGMA writable_schema/i],
    ["PRAGMA other.table_info(x)", /PRAGMA on schema/],
    ["BEGIN TRANSACTION", /BEGIN/],
    ["CREATE VIRTUAL TABLE x USING fts3tokenize(simple)", /virtual table module fts3tokenize/i],
    ["SELECT * FROM pragma_database_list", /pragma_database_list/],
  ] as const) {
    const r = await q(sql);
    assert.equal(r.status, 400, sql);
    assert.equal(r.body.errors[0].code, 7501, sql);
    assert.match(r.body.errors[0].message, refusal, sql);
  }
  const ext = await q("SELECT load_extension('/tmp/evil.so')");
  assert.equal(ext.status, 400);
  assert.match(ext.body.errors[0].message, /not authorized/);
  // Allowed PRAGMAs answer.
  await q("CREATE TABLE kept (v)");
  assert.deepEqual((await q("PRAGMA table_info(kept)")).body.result[0].results[0].name, "v");

  // An endless query is killed at the deadline (1 s here); meanwhile the platform answers other requests.
  const started = Date.now();
  const runaway = q("INSERT INTO kept VALUES (1); WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT count(*) FROM c");
  let answeredMeanwhile = 0;
  let settled = false;
  void runaway.finally(() => (settled = true));
  while (!settled) {
    const r = await p.api("GET", `/accounts/${p.accountId}/d1/database`);
    assert.equal(r.status, 200);
    answeredMeanwhile++;
    await new Promise((r) => setTimeout(r, 20));
  }
  const r = await runaway;
  assert.equal(r.status, 400);
  assert.equal(r.body.errors[0].code, 7429);
  assert.match(r.body.errors[0].message, /exceeded the time limit of 1000 ms/);
  assert.ok(Date.now() - started >= 1000);
  assert.ok(answeredMeanwhile >= 3, `the API answered ${answeredMeanwhile} requests while the query ran`);
  // The database works again, without the insert the killed request made.
  assert.deepEqual((await q("SELECT count(*) AS n FROM kept")).body.result[0].results, [{ n: 0 }]);
});

test("export gives a signed URL to the SQL; import takes wrangler's init/upload/ingest steps; both refuse others", async () => {
  const base = `/accounts/${p.accountId}/d1/database`;
  const src = (await p.api("POST", base, { name: "export-src" })).body.result;
  await p.api("POST", `${base}/${src.uuid}/query`, {
    sql: "CREATE TABLE notes (id INTEGER PRIMARY KEY AUTOINCREMENT, body TEXT, data BLOB); INSERT INTO notes (body, data) VALUES ('it''s', x'00ff'), (NULL, NULL); CREATE INDEX notes_body ON notes (body)",
  });
  const exp = await p.api("POST", `${base}/${src.uuid}/export`, { output_format: "polling", dump_options: {} });
  assert.equal(exp.status, 200, JSON.stringify(exp.body));
  assert.equal(exp.body.result.status, "complete");
  const dl = await request(exp.body.result.result.signed_url);
  assert.equal(dl.statusCode, 200);
  const sql = await dl.body.text();
  assert.match(sql, /CREATE TABLE notes/);
  assert.match(sql, /INSERT INTO "notes" VALUES\(1,'it''s',X'00ff'\);/);
  assert.match(sql, /CREATE INDEX notes_body/);
  // A guessed or expired token gets nothing.
  assert.equal((await request(`${p.url}/d1-transfers/${"x".repeat(43)}`)).statusCode, 404);
  assert.equal((await p.api("POST", `${base}/${src.uuid}/export`, { output_format: "file" })).status, 400);

  const dst = (await p.api("POST", base, { name: "import-dst" })).body.result;
  const etag = createHash("md5").update(sql).digest("hex");
  const init = await p.api("POST", `${base}/${dst.uuid}/import`, { action: "init", etag });
  assert.equal(init.status, 200, JSON.stringify(init.body));
  const put = await request(init.body.result.upload_url, { method: "PUT", body: sql });
  assert.equal(put.statusCode, 200);
  assert.equal(put.headers.etag, `"${etag}"`);
  // Account B cannot ingest A's upload into its own database.
  const other = (await cfB.d1.database.create({ account_id: accountB, name: "thief" })).uuid!;
  const stolen = await cfB.d1.database.import(other, { account_id: accountB, action: "ingest", etag, filename: init.body.result.filename }).catch((e) => e);
  assert.equal(stolen.status, 400);
  const ingest = await p.api("POST", `${base}/${dst.uuid}/import`, { action: "ingest", etag, filename: init.body.result.filename });
  assert.equal(ingest.status, 200, JSON.stringify(ingest.body));
  assert.equal(ingest.body.result.status, "complete");
  assert.ok(ingest.body.result.result.num_queries >= 4);
  const copied = await p.api("POST", `${base}/${dst.uuid}/query`, { sql: "SELECT id, body, data FROM notes ORDER BY id" });
  assert.deepEqual(copied.body.result[0].results, [
    { id: 1, body: "it's", data: [0, 255] },
    { id: 2, body: null, data: null },
  ]);
  const poll = await p.api("POST", `${base}/${dst.uuid}/import`, { action: "poll" });
  assert.equal(poll.body.result.status, "complete");

  // An import with a refused statement changes nothing.
  const bad = "CREATE TABLE x (v); ATTACH 'y' AS y;";
  const badEtag = createHash("md5").update(bad).digest("hex");
  const badInit = await p.api("POST", `${base}/${dst.uuid}/import`, { action: "init", etag: badEtag });
  await request(badInit.body.result.upload_url, { method: "PUT", body: bad });
  const refused = await p.api("POST", `${base}/${dst.uuid}/import`, { action: "ingest", etag: badEtag, filename: badInit.body.result.filename });
  assert.equal(refused.status, 400);
  assert.match(refused.body.errors[0].message, /ATTACH/);
  assert.equal((await p.api("POST", `${base}/${dst.uuid}/query`, { sql: "SELECT * FROM x" })).status, 400);

  // An account holds a few signed URLs at once (each may keep a file of up to a database's size for an hour): opening
  // more ends its oldest; another account's are not touched.
  const otherDb = (await cfB.d1.database.create({ account_id: accountB, name: "keeps-its-export" })).uuid!;
  const theirs = (await p.api("POST", `/accounts/${accountB}/d1/database/${otherDb}/export`, { output_format: "polling" }, p.keyHeaders())).body.result.result
    .signed_url as string;
  const urls: string[] = [];
  for (let i = 0; i < D1_LIMITS.transfersPerAccount + 2; i++) {
    urls.push((await p.api("POST", `${base}/${src.uuid}/export`, { output_format: "polling" })).body.result.result.signed_url);
  }
  const statusOf = async (url: string) => {
    const r = await request(url);
    await r.body.dump();
    return r.statusCode;
  };
  const statuses = [];
  for (const u of urls) statuses.push(await statusOf(u));
  assert.deepEqual(statuses, [...Array(2).fill(404), ...Array(D1_LIMITS.transfersPerAccount).fill(200)]);
  assert.equal(await statusOf(theirs), 200);

  // The URLs are credentials (whoever has one reads the dump, or feeds an import): never in the platform's log.
  const tokens = [exp.body.result.result.signed_url, init.body.result.upload_url, badInit.body.result.upload_url].map((u: string) => u.split("/").pop()!);
  for (const token of tokens)
    assert.ok(
      !p.output().includes(token),
      `a transfer token in the log: ${p
        .output()
        .split("\n")
        .filter((l) => l.includes(token))
        .join("\n")}`,
    );
});

test("databases and their data survive a platform restart", async () => {
  const base = `/accounts/${p.accountId}/d1/database`;
  const eu = await p.api("POST", base, { name: "in-the-eu", jurisdiction: "eu" });
  assert.equal(eu.status, 400, JSON.stringify(eu.body));
  assert.match(eu.body.errors[0].message, /^jurisdiction: jurisdictions are not supported here/);
  assert.equal((await p.api("GET", `${base}?name=in-the-eu`)).body.result.length, 0, "nothing created");
  const db = (await p.api("POST", base, { name: "durable" })).body.result;
  await p.api("POST", `${base}/${db.uuid}/query`, { sql: "CREATE TABLE t (v); INSERT INTO t VALUES ('before restart')" });
  await p.stop();
  const again = await startTestPlatform({ stateDir: p.stateDir, args: ["--dns-port", "0"], credentials: p });
  try {
    const r = await again.api("POST", `${base}/${db.uuid}/query`, { sql: "SELECT v FROM t" });
    assert.deepEqual(r.body.result[0].results, [{ v: "before restart" }]);
  } finally {
    await again.stop();
  }
});
