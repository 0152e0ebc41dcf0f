import assert from "node:assert/strict";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import type { TestPlatform } from "../../core/testing/platform.js";
import { createAccount, hit, startPlatform } from "../testing/helpers.js";
import { withTempDir } from "../../core/testing/temp-dir.js";
import { runWrangler, wranglerVersions } from "../testing/wrangler.js";

/**
 * The real wrangler's (3.114, and 4 on Node 22) safe-delivery commands against the platform: `versions upload` keeps a version without serving
 * it, `versions deploy` and `rollback` switch the live Worker between kept versions, `deployments list/status` show
 * the history, and another account sees none of it.
 */

for (const version of wranglerVersions()) {
  describe(`wrangler ${version}`, () => {
    let p: TestPlatform;
    before(async () => {
      p = await startPlatform();
    });
    after(async () => {
      await p?.dispose();
    });

    const NAME = "rollme";
    const project = (dir: string, answer: string) => {
      writeFileSync(join(dir, "wrangler.toml"), `name = "${NAME}"\nmain = "index.js"\ncompatibility_date = "2024-09-01"\n`);
      writeFileSync(
        join(dir, "index.js"),
        `export default { fetch(_req, env) { return new Response(${JSON.stringify(answer)} + (env.TOKEN ? " with token" : "")); } };\n`,
      );
    };
    const UUID = "[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}";
    const idAfter = (label: string, out: string) => {
      const m = new RegExp(`${label}:?\\s+(${UUID})`).exec(out);
      assert.ok(m, `${label} in: ${out}`);
      return m[1];
    };

    test(`wrangler ${version}: wrangler versions upload / versions deploy / deployments / rollback: the Worker answers with the code of the version deployed`, async () => {
      await withTempDir("wrangler-versions-", async (dir) => {
        const wrangler = async (...args: string[]) => {
          const r = await runWrangler(p, args, { version, cwd: dir });
          assert.equal(r.code, 0, `wrangler ${args.join(" ")}: ${r.stdout}${r.stderr}`);
          return r.stdout;
        };
        project(dir, "one");
        const v1 = idAfter("Current Version ID", await wrangler("deploy"));
        assert.equal((await hit(p, NAME, "/")).text, "one");

        project(dir, "two");
        const uploaded = await wrangler("versions", "upload", "--message", "second try", "--tag", "t2");
        const v2 = idAfter("Worker Version ID", uploaded);
        assert.notEqual(v2, v1);
        assert.equal((await hit(p, NAME, "/")).text, "one", "an uploaded version does not serve before it is deployed");

        const listed = await wrangler("versions", "list");
        assert.ok(listed.indexOf(v1) >= 0 && listed.indexOf(v1) < listed.indexOf(v2), `both versions, oldest first: ${listed}`);
        assert.match(listed, /Tag:\s+t2\s+Message:\s+second try/);
        const viewed = await wrangler("versions", "view", v2);
        assert.match(viewed, new RegExp(`Version ID:\\s+${v2}[\\s\\S]*Tag:\\s+t2[\\s\\S]*Message:\\s+second try`));

        await wrangler("versions", "deploy", `${v2}@100`, "-y", "--message", "ship two");
        assert.equal((await hit(p, NAME, "/")).text, "two");
        const status = await wrangler("deployments", "status");
        assert.match(status, new RegExp(`Message:\\s+ship two[\\s\\S]*\\(100%\\) ${v2}`));

        await wrangler("rollback", v1, "-y", "--message", "back to one");
        assert.equal((await hit(p, NAME, "/")).text, "one", "the old code answers after the rollback");
        const history = await wrangler("deployments", "list");
        const messages = [...history.matchAll(/^Message:\s+(.*)$/gm)].map((m) => m[1].trim());
        assert.deepEqual(messages.slice(-2), ["ship two", "back to one"], history);

        // A secret change is a new version, deployed at once; rolling back past it is confirmed (wrangler asks; -y says yes)
        // and keeps the Worker's secrets as they are now.
        const put = await runWrangler(p, ["secret", "put", "TOKEN"], { version, cwd: dir, input: "s3cret-value\n" });
        assert.equal(put.code, 0, put.stdout + put.stderr);
        assert.equal((await hit(p, NAME, "/")).text, "one with token");
        const latest = await p.api("GET", `/accounts/${p.accountId}/workers/scripts/${NAME}/deployments`);
        assert.equal(latest.body.result.deployments[0].annotations["workers/triggered_by"], "secret");
        const refused = await p.api("POST", `/accounts/${p.accountId}/workers/scripts/${NAME}/deployments`, {
          strategy: "percentage",
          versions: [{ version_id: v2, percentage: 100 }],
        });
        assert.equal(refused.status, 400);
        assert.equal(refused.body.errors[0].code, 10220);
        assert.match(refused.body.errors[0].message, /The following secrets have changed: TOKEN$/);
        const back = await runWrangler(p, ["rollback", v2, "-y"], { version, cwd: dir });
        assert.equal(back.code, 0, back.stdout + back.stderr);
        assert.match(back.stdout, /secrets have changed since version[\s\S]*\* TOKEN/);
        assert.equal((await hit(p, NAME, "/")).text, "two with token");
        assert.ok(!JSON.stringify((await p.api("GET", `/accounts/${p.accountId}/workers/scripts/${NAME}/versions`)).body).includes("s3cret-value"));
      });
    });

    test(`wrangler ${version}: another account neither sees nor deploys a Worker's versions, by wrangler or the API`, async () => {
      const other = await createAccount(p, "versions-other");
      const asOther = { accountId: other, credentials: { CLOUDFLARE_API_KEY: p.apiKey, CLOUDFLARE_EMAIL: p.email } };
      const versions = await p.api("GET", `/accounts/${p.accountId}/workers/scripts/${NAME}/versions`);
      const [newest] = versions.body.result.items as { id: string }[];
      const liveBefore = (await hit(p, NAME, "/")).text;
      await withTempDir("wrangler-versions-other-", async (dir) => {
        for (const args of [
          ["versions", "list", "--name", NAME],
          ["deployments", "list", "--name", NAME],
          ["rollback", newest.id, "--name", NAME, "-y"],
        ]) {
          const r = await runWrangler(p, args, { version, cwd: dir, ...asOther });
          assert.equal(r.code, 1, `wrangler ${args.join(" ")} as another account: ${r.stdout}`);
        }
      });
      const base = `/accounts/${other}/workers/scripts/${NAME}`;
      const key = p.keyHeaders();
      assert.equal((await p.api("GET", `${base}/versions`, undefined, key)).status, 404);
      assert.equal((await p.api("GET", `${base}/versions/${newest.id}`, undefined, key)).status, 404);
      assert.equal((await p.api("GET", `${base}/deployments`, undefined, key)).status, 404);
      const deploy = await p.api("POST", `${base}/deployments`, { strategy: "percentage", versions: [{ version_id: newest.id, percentage: 100 }] }, key);
      assert.equal(deploy.status, 404);
      assert.equal((await hit(p, NAME, "/")).text, liveBefore, "nothing changed");
    });

    test(`wrangler ${version}: wrangler versions deploy v1@60% v2@40%: both versions answer, deployments status/list show the split, secret put is refused, rollback goes back to one version`, async () => {
      const SPLIT = "splitme";
      await withTempDir("wrangler-split-", async (dir) => {
        const write = (answer: string) => {
          writeFileSync(join(dir, "wrangler.toml"), `name = "${SPLIT}"\nmain = "index.js"\ncompatibility_date = "2024-09-01"\n`);
          writeFileSync(join(dir, "index.js"), `export default { fetch() { return new Response(${JSON.stringify(answer)}); } };\n`);
        };
        const wrangler = async (...args: string[]) => {
          const r = await runWrangler(p, args, { version, cwd: dir });
          assert.equal(r.code, 0, `wrangler ${args.join(" ")}: ${r.stdout}${r.stderr}`);
          return r.stdout;
        };
        write("one");
        const v1 = idAfter("Current Version ID", await wrangler("deploy"));
        write("two");
        const v2 = idAfter("Worker Version ID", await wrangler("versions", "upload"));

        await wrangler("versions", "deploy", `${v1}@60%`, `${v2}@40%`, "--yes", "--message", "canary");
        const counts = new Map<string, number>();
        for (let i = 0; i < 200; i++) {
          const text = (await hit(p, SPLIT, "/")).text;
          counts.set(text, (counts.get(text) ?? 0) + 1);
        }
        assert.deepEqual([...counts.keys()].sort(), ["one", "two"], JSON.stringify([...counts]));
        for (const [answer, n] of counts) assert.ok(n >= 5, `${answer} answered only ${n} of 200 times`);
        const override = { "Cloudflare-Workers-Version-Overrides": `${SPLIT}="${v2}"` };
        for (let i = 0; i < 10; i++) assert.equal((await hit(p, SPLIT, "/", { headers: override })).text, "two");

        for (const shown of [await wrangler("deployments", "status"), await wrangler("deployments", "list")]) {
          assert.match(shown, new RegExp(`\\(60%\\) ${v1}`), shown);
          assert.match(shown, new RegExp(`\\(40%\\) ${v2}`), shown);
        }

        const put = await runWrangler(p, ["secret", "put", "TOKEN"], { version, cwd: dir, input: "s3cret-value\n" });
        assert.equal(put.code, 1, put.stdout + put.stderr);
        assert.match(put.stdout + put.stderr, /latest version of your Worker isn't currently deployed/);

        // With no version named, wrangler rolls back to the last deployment that had a version at 100%: v1's.
        await wrangler("rollback", "-y");
        for (let i = 0; i < 30; i++) assert.equal((await hit(p, SPLIT, "/")).text, "one");
        assert.match(await wrangler("deployments", "status"), new RegExp(`\\(100%\\) ${v1}`));
      });
    });

    test(`wrangler ${version}: a Worker with Durable Objects: wrangler versions upload keeps a version, versions deploy and rollback switch the objects' code, a split fails`, async () => {
      const name = "rollme-objects";
      const objects = (dir: string, label: string, extraMigration = "") => {
        writeFileSync(
          join(dir, "wrangler.toml"),
          `name = "${name}"\nmain = "index.js"\ncompatibility_date = "2024-09-01"\n\n[[durable_objects.bindings]]\nname = "COUNTER"\nclass_name = "Counter"\n\n[[migrations]]\ntag = "v1"\nnew_sqlite_classes = ["Counter"]\n${extraMigration}`,
        );
        writeFileSync(
          join(dir, "index.js"),
          `import { DurableObject } from "cloudflare:workers";
export class Counter extends DurableObject {
  async count() { const n = ((await this.ctx.storage.get("n")) ?? 0) + 1; await this.ctx.storage.put("n", n); return ${JSON.stringify(label)} + " " + n; }
}
export class Other extends DurableObject {}
export default { async fetch(_req, env) { return new Response(await env.COUNTER.get(env.COUNTER.idFromName("one")).count()); } };
`,
        );
      };
      await withTempDir("wrangler-versions-objects-", async (dir) => {
        const wrangler = async (...args: string[]) => {
          const r = await runWrangler(p, args, { version, cwd: dir });
          assert.equal(r.code, 0, `wrangler ${args.join(" ")}: ${r.stdout}${r.stderr}`);
          return r.stdout;
        };
        objects(dir, "one");
        const v1 = idAfter("Current Version ID", await wrangler("deploy"));
        assert.equal((await hit(p, name, "/")).text, "one 1");

        // wrangler sends only the migrations after the Worker's tag: none here, so the version is kept, not deployed.
        objects(dir, "two");
        const v2 = idAfter("Worker Version ID", await wrangler("versions", "upload"));
        assert.equal((await hit(p, name, "/")).text, "one 2", "the uploaded version does not serve before it is deployed");
        await wrangler("versions", "deploy", `${v2}@100`, "-y");
        assert.equal((await hit(p, name, "/")).text, "two 3", "the object runs v2's code on its storage");

        const split = await runWrangler(p, ["versions", "deploy", `${v1}@50`, `${v2}@50`, "-y"], { cwd: dir });
        assert.notEqual(split.code, 0);
        assert.match(split.stdout + split.stderr, /Durable Objects: here it runs one version at a time/);
        await wrangler("rollback", v1, "-y");
        assert.equal((await hit(p, name, "/")).text, "one 4");
        // wrangler deploy without a new migration goes through versions upload and a deployment at 100%.
        objects(dir, "four");
        await wrangler("deploy");
        assert.equal((await hit(p, name, "/")).text, "four 5");

        // A pending migration cannot go in a version upload (as hosted, 10211); wrangler deploy applies it.
        objects(dir, "three", `\n[[migrations]]\ntag = "v2"\nnew_sqlite_classes = ["Other"]\n`);
        const migrating = await runWrangler(p, ["versions", "upload"], { version, cwd: dir });
        assert.notEqual(migrating.code, 0);
        // wrangler 3 sends it and shows the platform's refusal; wrangler 4 refuses it itself, before uploading.
        const refusal =
          version === 3
            ? /may not carry Durable Object migrations[\s\S]*10211/
            : /pending Durable Object migration, which cannot be applied by `wrangler versions upload`/;
        assert.match(migrating.stdout + migrating.stderr, refusal);
        await wrangler("deploy");
        assert.equal((await hit(p, name, "/")).text, "three 6");
      });
    });
  });
}
