import assert from "node:assert/strict";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";
import type { TestPlatform } from "../../core/testing/platform.js";
import { startTwoNodes } from "../../core/testing/two-nodes.js";
import { hit } from "../testing/helpers.js";
import { eventually } from "../../core/testing/eventually.js";
import { withTempDir } from "../../core/testing/temp-dir.js";

const HANG_GUARD = { timeout: 300_000 };

test(
  "on two nodes (PostgreSQL + bucket), assets deployed through one node are served by the other, and a redeploy through the other by both",
  HANG_GUARD,
  async (t) => {
    const nodes = await startTwoNodes(t);
    if (!nodes) return;
    const [a, b] = nodes;
    const served = (node: TestPlatform, expected: string) =>
      eventually(async () => (await hit(node, "shared-site", "/about")).text === expected, `${expected} on ${node.url}`, 60_000);

    await withTempDir("assets-cluster-", async (dir) => {
      mkdirSync(join(dir, "public"));
      writeFileSync(join(dir, "index.js"), `export default { fetch() { return new Response("worker"); } };\n`);
      writeFileSync(join(dir, "public/about.html"), "about v1");
      writeFileSync(
        join(dir, "wrangler.toml"),
        `name = "shared-site"\nmain = "index.js"\ncompatibility_date = "2024-09-01"\n[assets]\ndirectory = "./public"\n`,
      );
      const first = await a.cli(["deploy"], { cwd: dir });
      assert.equal(first.code, 0, first.stderr);
      await served(a, "about v1");
      await served(b, "about v1");

      writeFileSync(join(dir, "public/about.html"), "about v2");
      const second = await b.cli(["deploy"], { cwd: dir });
      assert.equal(second.code, 0, second.stderr);
      assert.match(second.stdout, /Uploading 1 new or changed static asset \(of 1\)/);
      await served(b, "about v2");
      await served(a, "about v2");
      assert.equal((await hit(a, "shared-site", "/other")).text, "worker");
    });
  },
);
