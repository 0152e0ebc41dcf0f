import assert from "node:assert/strict";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import type { TestPlatform } from "../../core/testing/platform.js";
import { createAccount, hit, startPlatform } from "../testing/helpers.js";
import { withTempDir } from "../../core/testing/temp-dir.js";
import { runWrangler, wranglerVersions } from "../testing/wrangler.js";

/**
 * The real wrangler (3.114, and 4 on Node 22) against the platform with a D1 database and a Durable Object in one config: `wrangler deploy`
 * gives the Worker what `edgecli deploy` gives it, and wrangler's remote D1 commands (execute, import of a file,
 * migrations, export) work on the v4 D1 API.
 */

for (const version of wranglerVersions()) {
  describe(`wrangler ${version}`, () => {
    let p: TestPlatform;
    let databaseId: string;
    before(async () => {
      p = await startPlatform();
      const db = await p.api("POST", `/accounts/${p.accountId}/d1/database`, { name: "app-db" });
      assert.equal(db.status, 200, JSON.stringify(db.body));
      databaseId = db.body.result.uuid;
    });
    after(async () => {
      await p?.dispose();
    });

    const WORKER = `import { DurableObject } from "cloudflare:workers";
export class Counter extends DurableObject {
  increment() {
    this.ctx.storage.sql.exec("CREATE TABLE IF NOT EXISTS hits (n INTEGER NOT NULL)");
    this.ctx.storage.sql.exec("INSERT INTO hits VALUES (1)");
    return this.ctx.storage.sql.exec("SELECT count(*) AS n FROM hits").one().n;
  }
}
/** Exported but given no namespace by any migration: binding it must be refused by the platform. */
export class Other extends DurableObject {}
export default {
  async fetch(req, env) {
    const id = Number(new URL(req.url).searchParams.get("id") ?? 1);
    const user = await env.DB.prepare("SELECT name FROM users WHERE id = ?").bind(id).first("name");
    const count = await env.COUNTER.get(env.COUNTER.idFromName("a")).increment();
    return Response.json({ user, count });
  },
};
`;

    const config = (name: string, dbId: string, extra = "") => `name = "${name}"
main = "index.js"
compatibility_date = "2024-09-01"

[[d1_databases]]
binding = "DB"
database_name = "app-db"
database_id = "${dbId}"

[[durable_objects.bindings]]
name = "COUNTER"
class_name = "Counter"
${extra}
[[migrations]]
tag = "v1"
new_sqlite_classes = ["Counter"]
`;

    const project = (dir: string, toml: string) => {
      writeFileSync(join(dir, "wrangler.toml"), toml);
      writeFileSync(join(dir, "index.js"), WORKER);
    };

    const answer = async (script: string, path = "/") => {
      const r = await hit(p, script, path);
      assert.equal(r.status, 200, r.text);
      return JSON.parse(r.text);
    };

    /** The bindings a deploy printed (the lines after "Your worker has access to the following bindings:"). */
    const bindingsPrinted = (out: string) => /has access to the following bindings:\n((?:\s*- .*\n)+)/.exec(out)?.[1];

    /** What the settings API says a Worker binds, in a stable order. */
    const boundOf = async (script: string) => {
      const s = await p.api("GET", `/accounts/${p.accountId}/workers/scripts/${script}/settings`);
      assert.equal(s.status, 200, JSON.stringify(s.body));
      return (s.body.result.bindings as { name: string }[]).sort((a, b) => a.name.localeCompare(b.name));
    };
    const migrationTagOf = async (script: string) =>
      (await p.api("GET", `/accounts/${p.accountId}/workers/services/${script}`)).body.result.default_environment.script.migration_tag;

    test(`wrangler ${version}: wrangler deploy with [[d1_databases]], [[durable_objects.bindings]] and [[migrations]] gives what edgecli deploy gives`, async () => {
      await withTempDir("wrangler-d1-do-", async (dir) => {
        const setup = await runWrangler(
          p,
          [
            "d1",
            "execute",
            "app-db",
            "--remote",
            "--command",
            "CREATE TABLE users (id INTEGER PRIMARY KEY, name TEXT NOT NULL); INSERT INTO users VALUES (1, 'ada')",
          ],
          { cwd: dir },
        );
        assert.equal(setup.code, 0, setup.stderr);

        project(dir, config("by-wrangler", databaseId));
        const deployed = await runWrangler(p, ["deploy"], { version, cwd: dir });
        assert.equal(deployed.code, 0, deployed.stdout + deployed.stderr);
        if (version === 3) {
          assert.match(deployed.stdout, /- Durable Objects:\n\s+- COUNTER: Counter/);
          assert.match(deployed.stdout, new RegExp(`- D1 Databases:\\n\\s+- DB: app-db \\(${databaseId}\\)`));
        } else {
          // wrangler 4 prints its bindings as a table.
          assert.match(deployed.stdout, /env\.COUNTER \(Counter\)\s+Durable Object/);
          assert.match(deployed.stdout, /env\.DB \(app-db\)\s+D1 Database/);
        }
        assert.deepEqual(await answer("by-wrangler"), { user: "ada", count: 1 });
        assert.deepEqual(await answer("by-wrangler"), { user: "ada", count: 2 });

        // The same project through edgecli deploy, as another Worker: the same bindings, migration tag and answers.
        const edge = await p.cli(["deploy", "--name", "by-edgecli"], { cwd: dir });
        assert.equal(edge.code, 0, edge.stderr);
        assert.match(bindingsPrinted(edge.stdout) ?? "", /- D1 Databases:\n\s+- DB: app-db/);
        if (version === 3) assert.equal(bindingsPrinted(edge.stdout), bindingsPrinted(deployed.stdout), "both print the bindings alike");
        assert.deepEqual(await boundOf("by-wrangler"), await boundOf("by-edgecli"));
        assert.deepEqual(
          (await boundOf("by-wrangler")).map((b) => b.name),
          ["COUNTER", "DB"],
        );
        assert.equal(await migrationTagOf("by-wrangler"), "v1");
        assert.equal(await migrationTagOf("by-edgecli"), "v1");
        assert.deepEqual(await answer("by-edgecli"), { user: "ada", count: 1 }, "its own Durable Object namespace");

        // A second wrangler deploy (no new migration: wrangler's versions flow) keeps the object's state.
        const again = await runWrangler(p, ["deploy"], { version, cwd: dir });
        assert.equal(again.code, 0, again.stdout + again.stderr);
        assert.deepEqual(await answer("by-wrangler"), { user: "ada", count: 3 });

        // A class bound without a migration is refused with the platform's message; the deployed version serves on.
        project(dir, config("by-wrangler", databaseId, `[[durable_objects.bindings]]\nname = "OTHER"\nclass_name = "Other"\n`));
        const refused = await runWrangler(p, ["deploy"], { version, cwd: dir });
        assert.equal(refused.code, 1);
        assert.match(refused.stdout + refused.stderr, /Binding OTHER: class Other has no Durable Object namespace/);
        assert.deepEqual(await answer("by-wrangler"), { user: "ada", count: 4 });

        // The class of another Worker (script_name): refused saying why, as the API refuses it.
        project(dir, config("by-wrangler", databaseId, `[[durable_objects.bindings]]\nname = "THEIRS"\nclass_name = "Counter"\nscript_name = "by-edgecli"\n`));
        const theirs = await runWrangler(p, ["deploy"], { version, cwd: dir });
        assert.equal(theirs.code, 1);
        assert.match(theirs.stdout + theirs.stderr, /Binding THEIRS: class Counter belongs to another Worker \(script_name "by-edgecli"\)/);
        assert.deepEqual(await answer("by-wrangler"), { user: "ada", count: 5 });
      });
    });

    test(`wrangler ${version}: wrangler d1 migrations list/apply, execute --file (import) and export --remote on the v4 D1 API`, async () => {
      await withTempDir("wrangler-d1-", async (dir) => {
        project(dir, config("migrated", databaseId));
        mkdirSync(join(dir, "migrations"));
        writeFileSync(join(dir, "migrations", "0001_people.sql"), "CREATE TABLE people (id INTEGER PRIMARY KEY, name TEXT NOT NULL);\n");
        writeFileSync(join(dir, "migrations", "0002_seed.sql"), "INSERT INTO people (name) VALUES ('grace');\n");

        const pending = await runWrangler(p, ["d1", "migrations", "list", "app-db", "--remote"], { version, cwd: dir });
        assert.equal(pending.code, 0, pending.stderr);
        assert.match(pending.stdout, /0001_people\.sql[\s\S]*0002_seed\.sql/);
        const applied = await runWrangler(p, ["d1", "migrations", "apply", "app-db", "--remote"], { version, cwd: dir });
        assert.equal(applied.code, 0, applied.stdout + applied.stderr);
        assert.match(applied.stdout, /0002_seed\.sql\s*│\s*✅/);
        const none = await runWrangler(p, ["d1", "migrations", "list", "app-db", "--remote"], { version, cwd: dir });
        assert.match(none.stdout, /No migrations to apply/);
        // wrangler's own record of them, in the table it reads.
        const recorded = await p.api("POST", `/accounts/${p.accountId}/d1/database/${databaseId}/query`, { sql: "SELECT name FROM d1_migrations ORDER BY id" });
        assert.deepEqual(
          recorded.body.result[0].results.map((r: { name: string }) => r.name),
          ["0001_people.sql", "0002_seed.sql"],
        );

        // --file goes through the import flow (init, upload to the returned URL, ingest).
        writeFileSync(join(dir, "more.sql"), "INSERT INTO people (name) VALUES ('linus');\nINSERT INTO people (name) VALUES ('barbara');\n");
        const imported = await runWrangler(p, ["d1", "execute", "app-db", "--remote", "--file", "more.sql", "-y"], { version, cwd: dir });
        assert.equal(imported.code, 0, imported.stdout + imported.stderr);
        assert.match(imported.stdout, /Imported 2 statements/);
        const counted = await runWrangler(p, ["d1", "execute", "app-db", "--remote", "--json", "--command", "SELECT count(*) AS n FROM people"], {
          version,
          cwd: dir,
        });
        assert.equal(counted.code, 0, counted.stderr);
        assert.equal(JSON.parse(counted.stdout)[0].results[0].n, 3);

        // A statement SQLite refuses: wrangler shows SQLite's message and exits 1.
        const bad = await runWrangler(p, ["d1", "execute", "app-db", "--remote", "--command", "SELECT * FROM nowhere"], { version, cwd: dir });
        assert.equal(bad.code, 1);
        assert.match(bad.stdout + bad.stderr, /no such table: nowhere/);

        const exported = await runWrangler(p, ["d1", "export", "app-db", "--remote", "--table", "people", "--output", "people.sql"], { version, cwd: dir });
        assert.equal(exported.code, 0, exported.stdout + exported.stderr);
        const dump = readFileSync(join(dir, "people.sql"), "utf8");
        assert.match(dump, /CREATE TABLE people/);
        assert.match(dump, /INSERT INTO "people" .*'barbara'/);
      });
    });

    test(`wrangler ${version}: wrangler deploy of another account cannot bind this account's D1 database`, async () => {
      const other = await createAccount(p, "wrangler-other");
      const asOther = { accountId: other, credentials: { CLOUDFLARE_API_KEY: p.apiKey, CLOUDFLARE_EMAIL: p.email } };
      await withTempDir("wrangler-other-", async (dir) => {
        project(dir, config("stealer", databaseId));
        const r = await runWrangler(p, ["deploy"], { version, cwd: dir, ...asOther });
        assert.equal(r.code, 1);
        assert.match(r.stdout + r.stderr, new RegExp(`Binding DB: D1 database "${databaseId}" does not exist in this account`));
        assert.equal((await hit(p, "stealer", "/")).status, 404, "nothing was deployed");
        // Nor can its d1 commands find the database by name or reach it by id.
        const q = await runWrangler(p, ["d1", "execute", "app-db", "--remote", "--command", "SELECT 1"], { version, cwd: dir, ...asOther });
        assert.equal(q.code, 1);
        const direct = await p.api("POST", `/accounts/${other}/d1/database/${databaseId}/query`, { sql: "SELECT 1" }, p.keyHeaders());
        assert.equal(direct.status, 404);
      });
    });
  });
}
