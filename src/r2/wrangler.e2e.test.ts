import assert from "node:assert/strict";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import type { TestPlatform } from "../core/testing/platform.js";
import { startPlatform } from "../workers/testing/helpers.js";
import { withTempDir } from "../core/testing/temp-dir.js";
import { runWrangler, wranglerVersions, wranglerSucceeded } from "../workers/testing/wrangler.js";

// The real wrangler (3.114, and the latest 4 on Node 22) against R2's v4 API: buckets, objects (--remote: wrangler 4
// defaults object commands to its local store), `bucket info` (the GraphQL storage dataset), CORS and lifecycle.
for (const version of wranglerVersions()) {
  describe(`wrangler ${version}: r2`, () => {
    let p: TestPlatform;
    before(async () => {
      p = await startPlatform();
    });
    after(async () => {
      await p?.dispose();
    });
    const ok = wranglerSucceeded;

    test("bucket create, object put/get --remote, bucket info counts the objects, cors set/list/delete, lifecycle refused", async () => {
      await withTempDir("wrangler-r2-", async (cwd) => {
        const wrangler = (...args: string[]) => runWrangler(p, args, { cwd, version });
        // wrangler 3 has no --remote (its object commands go to the API unless given --local).
        const remote = version === 4 ? ["--remote"] : [];
        ok(await wrangler("r2", "bucket", "create", "photos"));
        writeFileSync(join(cwd, "a.txt"), "hello r2");
        ok(await wrangler("r2", "object", "put", "photos/a.txt", "--file", "a.txt", ...remote));
        ok(await wrangler("r2", "object", "put", "photos/b.txt", "--file", "a.txt", ...remote));
        ok(await wrangler("r2", "object", "get", "photos/a.txt", "--file", "back.txt", ...remote));
        assert.equal(readFileSync(join(cwd, "back.txt"), "utf8"), "hello r2");

        const info = ok(await wrangler("r2", "bucket", "info", "photos"));
        assert.match(info.stdout, /object_count:\s+2/);
        assert.match(info.stdout, /bucket_size:\s+\d+(\.\d+)? B/);
        assert.doesNotMatch(info.stdout, /bucket_size:\s+0 B/);

        assert.match(ok(await wrangler("r2", "bucket", "cors", "list", "photos")).stdout, /There is no CORS configuration defined/);
        writeFileSync(
          join(cwd, "cors.json"),
          JSON.stringify({ rules: [{ allowed: { origins: ["https://app.example"], methods: ["GET", "PUT"] }, maxAgeSeconds: 600 }] }),
        );
        ok(await wrangler("r2", "bucket", "cors", "set", "photos", "--file", "cors.json", "--force"));
        const listed = ok(await wrangler("r2", "bucket", "cors", "list", "photos")).stdout;
        assert.match(listed, /allowed_origins:\s+https:\/\/app\.example/);
        assert.match(listed, /allowed_methods:\s+GET, PUT/);
        const s3View = await p.api("GET", `/accounts/${p.accountId}/r2/buckets/photos/cors`);
        assert.equal(s3View.body.result.rules[0].maxAgeSeconds, 600);
        ok(await wrangler("r2", "bucket", "cors", "delete", "photos", "--force"));
        assert.match(ok(await wrangler("r2", "bucket", "cors", "list", "photos")).stdout, /There is no CORS configuration defined/);

        assert.match(ok(await wrangler("r2", "bucket", "lifecycle", "list", "photos")).stdout, /There are no lifecycle rules/);
        const add = await wrangler("r2", "bucket", "lifecycle", "add", "photos", "expire-old", "--expire-days", "30", "--force");
        assert.equal(add.code, 1, add.stdout);
        assert.match(add.stdout + add.stderr, /Object lifecycle rules are not supported here/);
      });
    });
  });
}
