import assert from "node:assert/strict";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import type { TestPlatform } from "../core/testing/platform.js";
import { startPlatform } from "../workers/testing/helpers.js";
import { withTempDir } from "../core/testing/temp-dir.js";
import { runWrangler, wranglerVersions, wranglerSucceeded } from "../workers/testing/wrangler.js";

// The real wrangler (3.114, and the latest 4 on Node 22) against the KV API. wrangler 4 reads and writes keys in its
// local store (.wrangler/state) unless given --remote; wrangler 3 goes to the API by default (docs/kv.md).
for (const version of wranglerVersions()) {
  describe(`wrangler ${version}: kv`, () => {
    let p: TestPlatform;
    before(async () => {
      p = await startPlatform();
    });
    after(async () => {
      await p?.dispose();
    });
    const ok = wranglerSucceeded;

    test("namespace create/list/delete and key put/get/list/delete on the platform", async () => {
      await withTempDir("wrangler-kv-", async (cwd) => {
        const wrangler = (...args: string[]) => runWrangler(p, args, { cwd, version });
        const remote = version === 4 ? ["--remote"] : [];
        const created = ok(await wrangler("kv", "namespace", "create", "settings")).stdout;
        const id = /"?id"?\s*[=:]\s*"([0-9a-f]{32})"/.exec(created)?.[1];
        assert.ok(id, created);
        assert.match(ok(await wrangler("kv", "namespace", "list")).stdout, new RegExp(id));

        ok(await wrangler("kv", "key", "put", "theme", "dark", "--namespace-id", id, ...remote));
        assert.equal(ok(await wrangler("kv", "key", "get", "theme", "--namespace-id", id, "--text", ...remote)).stdout.trim(), "dark");
        const stored = await p.api("GET", `/accounts/${p.accountId}/storage/kv/namespaces/${id}/values/theme`);
        assert.equal(stored.body, "dark");
        const keys = JSON.parse(ok(await wrangler("kv", "key", "list", "--namespace-id", id, ...remote)).stdout) as { name: string }[];
        assert.deepEqual(
          keys.map((k) => k.name),
          ["theme"],
        );
        ok(await wrangler("kv", "key", "delete", "theme", "--namespace-id", id, ...remote));
        assert.equal((await p.api("GET", `/accounts/${p.accountId}/storage/kv/namespaces/${id}/values/theme`)).status, 404);

        if (version === 4) {
          // Without --remote, wrangler 4 writes to its own local store: the platform's namespace is untouched.
          ok(await wrangler("kv", "key", "put", "local-only", "x", "--namespace-id", id));
          assert.equal((await p.api("GET", `/accounts/${p.accountId}/storage/kv/namespaces/${id}/values/local-only`)).status, 404);
          assert.ok(existsSync(join(cwd, ".wrangler", "state")), "wrangler 4 kept it in .wrangler/state");
        }
        ok(await wrangler("kv", "namespace", "delete", "--namespace-id", id, ...(version === 4 ? ["--skip-confirmation"] : [])));
        assert.doesNotMatch(ok(await wrangler("kv", "namespace", "list")).stdout, new RegExp(id));
      });
    });
  });
}
