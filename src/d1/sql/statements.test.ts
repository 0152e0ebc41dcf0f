import assert from "node:assert/strict";
import { test } from "node:test";
import Database from "better-sqlite3";
import { refusedStatement } from "./statement-guard.js";
import { numberedParameters, splitStatements } from "./statements.js";

const split = (sql: string) => splitStatements(sql).map((s) => s.sql);

test("statements end at ; outside strings, quoted names and comments; empty ones are dropped", () => {
  assert.deepEqual(split("SELECT 1; SELECT 2"), ["SELECT 1", "SELECT 2"]);
  assert.deepEqual(split("SELECT 'a;b'; SELECT \"c;d\" FROM [e;f]; SELECT `g;h`"), ["SELECT 'a;b'", 'SELECT "c;d" FROM [e;f]', "SELECT `g;h`"]);
  assert.deepEqual(split("SELECT 'it''s;'; -- a comment; with a semicolon\nSELECT /* ; */ 2;;  ;"), [
    "SELECT 'it''s;'",
    "-- a comment; with a semicolon\nSELECT /* ; */ 2",
  ]);
  assert.deepEqual(split("  -- only a comment\n ; /* and another */ "), []);
  assert.deepEqual(split("SELECT x'3b'; SELECT 1e+5;"), ["SELECT x'3b'", "SELECT 1e+5"]);
});

test("a CREATE TRIGGER's body keeps its ; up to `; END`, even with CASE … END inside", () => {
  const sql = `CREATE TEMP TRIGGER IF NOT EXISTS t AFTER INSERT ON a BEGIN
    UPDATE b SET n = CASE WHEN new.x THEN 1 ELSE 0 END;
    INSERT INTO c VALUES (1);
  END; SELECT 1`;
  const out = split(sql);
  assert.equal(out.length, 2);
  assert.match(out[0]!, /^CREATE TEMP TRIGGER[\s\S]*INSERT INTO c VALUES \(1\);\n\s*END$/);
  // SQLite agrees: each piece prepares as one statement.
  const db = new Database(":memory:");
  db.exec("CREATE TABLE a (x); CREATE TABLE b (n); CREATE TABLE c (v)");
  for (const s of out) db.prepare(s);
});

test("?NNN parameters are found; ? alone is positional", () => {
  assert.deepEqual(numberedParameters(splitStatements("SELECT ?2, ?1, ?2")[0]!), [2, 1, 2]);
  assert.deepEqual(numberedParameters(splitStatements("SELECT ?, ?")[0]!), []);
});

test("the guard refuses what reaches past the file and lets ordinary SQL through", () => {
  const refused = (sql: string) => refusedStatement(splitStatements(sql)[0]!);
  for (const sql of [
    "ATTACH 'x' AS y",
    "/* c */ attach database 'x' as y",
    "DETACH y",
    "EXPLAIN ATTACH 'x' AS y",
    "EXPLAIN QUERY PLAN PRAGMA journal_mode",
    "VACUUM INTO '/tmp/x'",
    "PRAGMA journal_mode=DELETE",
    "PRAGMA main.writable_schema = 1",
    "PRAGMA temp.table_info(x)",
    "PRAGMA page_size = 512",
    'PRAGMA "schema_version" = 3',
    "BEGIN",
    "COMMIT",
    "SAVEPOINT s",
    "CREATE VIRTUAL TABLE v USING dbstat",
    "SELECT * FROM pragma_database_list",
  ])
    assert.ok(refused(sql), sql);
  for (const sql of [
    "SELECT 1",
    "CREATE TABLE attach (begin)",
    "INSERT INTO t VALUES ('ATTACH')",
    "PRAGMA table_info(users)",
    "PRAGMA main.index_list('users')",
    "PRAGMA foreign_keys",
    "PRAGMA defer_foreign_keys = ON",
    "PRAGMA page_size",
    "VACUUM",
    "CREATE VIRTUAL TABLE docs USING fts5(body)",
    "WITH x AS (SELECT 1) SELECT * FROM x",
  ])
    assert.equal(refused(sql), undefined, sql);
});
