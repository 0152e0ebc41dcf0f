import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { request } from "undici";
import type { TestPlatform } from "../../core/testing/platform.js";
import { hit, startPlatform } from "../testing/helpers.js";
import { withTempDir } from "../../core/testing/temp-dir.js";
import { runWrangler, wranglerVersions } from "../testing/wrangler.js";

for (const version of wranglerVersions()) {
  describe(`wrangler ${version}`, () => {
    let p: TestPlatform;
    before(async () => {
      p = await startPlatform();
    });
    after(() => p?.dispose());

    const WORKER = `export default { fetch(req) { const u = new URL(req.url); return new Response("routed " + u.hostname + u.pathname); } };\n`;

    async function at(host: string, path: string): Promise<{ status: number; text: string }> {
      const port = new URL(p.url).port;
      const res = await request(`http://127.0.0.1:${port}${path}`, { headers: { host } });
      return { status: res.statusCode, text: await res.body.text() };
    }

    const deploy = (dir: string, toml: string) => {
      writeFileSync(join(dir, "wrangler.toml"), toml);
      return runWrangler(p, ["deploy"], { version, cwd: dir });
    };

    test(
      `wrangler ${version}: wrangler deploy with routes (zone_name, zone_id, route) and a custom domain: the edge serves the Worker at those hostnames`,
      { timeout: 600_000 },
      async () => {
        const zone = `wr${randomBytes(4).toString("hex")}.example`;
        const created = await p.api("POST", "/zones", { name: zone, account: { id: p.accountId } });
        assert.equal(created.status, 200);
        const zoneId = created.body.result.id as string;
        await withTempDir("wrangler-routes-", async (dir) => {
          writeFileSync(join(dir, "index.js"), WORKER);
          const head = `name = "wr-routes"\nmain = "index.js"\ncompatibility_date = "2024-09-01"\n`;
          const first = await deploy(
            dir,
            `${head}routes = [
  { pattern = "app.${zone}/*", zone_name = "${zone}" },
  { pattern = "${zone}/api/*", zone_id = "${zoneId}" },
  { pattern = "shop.${zone}", custom_domain = true },
]\n`,
          );
          assert.equal(first.code, 0, first.stdout + first.stderr);
          assert.match(first.stdout, new RegExp(`app\\.${zone}/\\* \\(zone name: ${zone}\\)`));
          assert.equal((await at(`app.${zone}`, "/x")).text, `routed app.${zone}/x`);
          assert.equal((await at(zone, "/api/v1")).text, `routed ${zone}/api/v1`);
          assert.equal((await at(zone, "/other")).status, 404);
          assert.equal((await at(`shop.${zone}`, "/cart")).text, `routed shop.${zone}/cart`);
          // Deployed with routes and without workers_dev = true: not served at <name>.<workers domain>, as hosted.
          assert.equal((await hit(p, "wr-routes", "/x")).status, 404);

          // `route` alone, with workers_dev: the routes become that one, the custom domain stays (wrangler only adds them),
          // and the Worker's URL is on again.
          const second = await deploy(dir, `${head}workers_dev = true\nroute = "www.${zone}/*"\n`);
          assert.equal(second.code, 0, second.stdout + second.stderr);
          assert.equal((await at(`www.${zone}`, "/")).text, `routed www.${zone}/`);
          assert.equal((await at(`app.${zone}`, "/x")).status, 404);
          assert.equal((await hit(p, "wr-routes", "/")).text, `routed wr-routes.workers.localhost/`);
          const routes = await p.api("GET", `/zones/${zoneId}/workers/routes`);
          assert.deepEqual(routes.body.result, [{ id: routes.body.result[0].id, pattern: `www.${zone}/*`, script: "wr-routes" }]);

          // A route outside the account's zones: refused whole (the hosted code), and the routes stay as they were.
          const outside = await deploy(dir, `${head}route = "www.not-ours.example/*"\n`);
          assert.notEqual(outside.code, 0);
          assert.match(
            outside.stdout + outside.stderr,
            /Could not find a zone named or identified by "www\.not-ours\.example" in this account \[code: 10083\]/,
          );
          assert.equal((await at(`www.${zone}`, "/")).text, `routed www.${zone}/`);
        });
      },
    );

    test(
      `wrangler ${version}: edgecli deploy takes the same routes and custom domains, and refuses a malformed one before uploading`,
      { timeout: 300_000 },
      async () => {
        const zone = `ec${randomBytes(4).toString("hex")}.example`;
        assert.equal((await p.api("POST", "/zones", { name: zone, account: { id: p.accountId } })).status, 200);
        await withTempDir("edgecli-routes-", async (dir) => {
          writeFileSync(join(dir, "index.js"), WORKER);
          const head = `name = "ec-routes"\nmain = "index.js"\ncompatibility_date = "2024-09-01"\n`;
          writeFileSync(
            join(dir, "wrangler.toml"),
            `${head}routes = [{ pattern = "shop.${zone}", custom_domain = true, zone_name = "${zone}" }, "app.${zone}/*"]\n`,
          );
          const r = await p.cli(["deploy"], { cwd: dir });
          assert.equal(r.code, 0, r.stdout + r.stderr);
          assert.match(r.stdout + r.stderr, new RegExp(`app\\.${zone}/\\*`));
          assert.equal((await at(`app.${zone}`, "/a")).text, `routed app.${zone}/a`);
          assert.equal((await at(`shop.${zone}`, "/b")).text, `routed shop.${zone}/b`);
          assert.equal((await hit(p, "ec-routes", "/x")).status, 404, "routes without workers_dev: not at its workers-domain URL");

          writeFileSync(join(dir, "wrangler.toml"), `${head}routes = [{ pattern = "*.${zone}", custom_domain = true }]\n`);
          const bad = await p.cli(["deploy"], { cwd: dir });
          assert.equal(bad.code, 1);
          assert.match(bad.stderr, /wildcard operators \(\*\) are not allowed in Custom Domains/);
          assert.doesNotMatch(bad.stdout, /Uploaded/);
        });
      },
    );
  });
}
