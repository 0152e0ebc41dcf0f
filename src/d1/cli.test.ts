import assert from "node:assert/strict";
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, test } from "node:test";
import type { CliResult, TestPlatform } from "../core/testing/platform.js";
import { hit, startPlatform } from "../workers/testing/helpers.js";
import { withTempDir } from "../core/testing/temp-dir.js";

// The real `edgecli` binary against a real platform (and, with --local, on its state directory).
let p: TestPlatform;
before(async () => {
  p = await startPlatform();
});
after(() => p?.dispose());

const ok = (r: CliResult) => {
  assert.equal(r.code, 0, `exit ${r.code}\nstdout: ${r.stdout}\nstderr: ${r.stderr}`);
  return r;
};
const fails = (r: CliResult, pattern: RegExp) => {
  assert.equal(r.code, 1, `expected failure\nstdout: ${r.stdout}\nstderr: ${r.stderr}`);
  assert.match(r.stderr, pattern);
  return r;
};

test("create, list, info, execute (--command, --file, --json), export and delete", async () => {
  await withTempDir("d1-cli-", async (cwd) => {
    const d1 = (...args: string[]) => p.cli(["d1", ...args], { cwd });
    const created = ok(await d1("create", "cli-db"));
    const uuid = /database_id = "([0-9a-f-]{36})"/.exec(created.stdout)?.[1] ?? assert.fail(created.stdout);
    assert.match(created.stdout, /\[\[d1_databases\]\]\nbinding = "DB"\ndatabase_name = "cli-db"/);
    fails(await d1("create", "cli-db"), /already exists/);

    assert.ok((JSON.parse(ok(await d1("list", "--json")).stdout) as { uuid: string }[]).some((d) => d.uuid === uuid));
    assert.match(ok(await d1("list")).stdout, /cli-db/);

    writeFileSync(join(cwd, "schema.sql"), "CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT);\nINSERT INTO t (v) VALUES ('one'), ('two');\n");
    const fromFile = ok(await d1("execute", "cli-db", "--file", "schema.sql"));
    assert.match(fromFile.stdout, /Executed 2 commands/);
    const json = JSON.parse(ok(await d1("execute", "cli-db", "--command", "SELECT v FROM t ORDER BY id", "--json")).stdout);
    assert.deepEqual(json[0].results, [{ v: "one" }, { v: "two" }]);
    const table = ok(await d1("execute", "cli-db", "--command", "SELECT v FROM t ORDER BY id"));
    assert.match(table.stdout, /│ v +│\n├─+┤\n│ one │\n│ two │/);
    fails(await d1("execute", "cli-db", "--command", "SELECT * FROM missing"), /no such table: missing: SQLITE_ERROR/);
    fails(await d1("execute", "cli-db"), /exactly one of --command and --file/);
    fails(await d1("execute", "nope", "--command", "SELECT 1"), /Couldn't find DB with name 'nope'/);

    const info = JSON.parse(ok(await d1("info", "cli-db", "--json")).stdout);
    assert.equal(info.num_tables, 1);

    ok(await d1("export", "cli-db", "--output", "out.sql"));
    assert.match(readFileSync(join(cwd, "out.sql"), "utf8"), /INSERT INTO "t" VALUES\(2,'two'\);/);

    ok(await d1("delete", "cli-db", "-y"));
    fails(await d1("info", "cli-db"), /Couldn't find DB/);
  });
});

test("migrations create, list and apply from migrations_dir, remotely and with --local; deploy binds the database", async () => {
  await withTempDir("d1-mig-", async (cwd) => {
    const uuid = /database_id = "([0-9a-f-]{36})"/.exec(ok(await p.cli(["d1", "create", "app-db"], { cwd })).stdout)![1]!;
    writeFileSync(
      join(cwd, "wrangler.toml"),
      `name = "d1-app"\nmain = "index.js"\ncompatibility_date = "2024-09-01"\n[[d1_databases]]\nbinding = "DB"\ndatabase_name = "app-db"\ndatabase_id = "${uuid}"\nmigrations_dir = "db/migrations"\n`,
    );
    const d1 = (...args: string[]) => p.cli(["d1", ...args], { cwd });
    const made = ok(await d1("migrations", "create", "DB", "create users"));
    assert.match(made.stdout, /0001_create_users\.sql/);
    const dir = join(cwd, "db", "migrations");
    writeFileSync(join(dir, "0001_create_users.sql"), "CREATE TABLE users (id INTEGER PRIMARY KEY, name TEXT);\n");
    ok(await d1("migrations", "create", "DB", "seed"));
    writeFileSync(join(dir, "0002_seed.sql"), "INSERT INTO users (name) VALUES ('ada');\n");
    assert.deepEqual(readdirSync(dir), ["0001_create_users.sql", "0002_seed.sql"]);
    assert.match(ok(await d1("migrations", "list", "DB")).stdout, /0001_create_users\.sql[\s\S]*0002_seed\.sql/);
    // A failing migration is not recorded and stops the ones after it.
    writeFileSync(join(dir, "0003_broken.sql"), "INSERT INTO nowhere VALUES (1);\n");
    fails(await d1("migrations", "apply", "DB"), /Migration 0003_broken\.sql failed[\s\S]*no such table: nowhere/);
    assert.match(ok(await d1("migrations", "list", "DB")).stdout, /0003_broken\.sql/);
    assert.doesNotMatch(ok(await d1("migrations", "list", "DB")).stdout, /0001/);
    writeFileSync(join(dir, "0003_broken.sql"), "SELECT 1;\n");
    ok(await d1("migrations", "apply", "DB"));
    assert.match(ok(await d1("migrations", "apply", "DB")).stdout, /No migrations to apply/);
    const names = JSON.parse(ok(await d1("execute", "DB", "--command", "SELECT name FROM d1_migrations ORDER BY id", "--json")).stdout);
    assert.deepEqual(
      names[0].results.map((r: { name: string }) => r.name),
      ["0001_create_users.sql", "0002_seed.sql", "0003_broken.sql"],
    );

    // deploy honours [[d1_databases]]: the Worker reads the migrated table.
    writeFileSync(
      join(cwd, "index.js"),
      `export default { async fetch(req, env) { return Response.json(await env.DB.prepare("SELECT name FROM users").all().then((r) => r.results)); } };\n`,
    );
    ok(await p.cli(["deploy"], { cwd }));
    assert.deepEqual(JSON.parse((await hit(p, "d1-app", "/")).text), [{ name: "ada" }]);

    // --local works on a state directory's files, with no server: the config's database_id is recorded there.
    const state = join(cwd, "local-state");
    mkdirSync(state);
    const local = (...args: string[]) => d1(...args, "--local", "--persist-to", state);
    ok(await local("migrations", "apply", "DB"));
    const rows = JSON.parse(ok(await local("execute", "DB", "--command", "SELECT name FROM users", "--json")).stdout);
    assert.deepEqual(rows[0].results, [{ name: "ada" }]);
    assert.ok(existsSync(join(state, "d1", `${uuid}.sqlite`)));
    fails(await local("execute", "DB", "--command", "ATTACH 'x' AS x"), /ATTACH/);
    ok(await local("export", "DB", "--output", "local.sql", "--no-schema"));
    assert.doesNotMatch(readFileSync(join(cwd, "local.sql"), "utf8"), /CREATE TABLE/);
  });
});

test("--help is there for every d1 command", async () => {
  for (const cmd of [
    ["create"],
    ["list"],
    ["info"],
    ["delete"],
    ["execute"],
    ["export"],
    ["migrations", "create"],
    ["migrations", "list"],
    ["migrations", "apply"],
  ]) {
    const r = ok(await p.cli(["d1", ...cmd, "--help"]));
    assert.match(r.stdout, new RegExp(`edgecli d1 ${cmd.join(" ")}`), cmd.join(" "));
  }
});
