import assert from "node:assert/strict";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import type { TestPlatform } from "../core/testing/platform.js";
import { createAccount, hit, logEntries, startPlatform } from "../workers/testing/helpers.js";
import { eventually } from "../core/testing/eventually.js";
import { withTempDir } from "../core/testing/temp-dir.js";
import { runWrangler, wranglerVersions, wranglerSucceeded } from "../workers/testing/wrangler.js";

// The real wrangler (3.114, and 4 on Node 22) against the Queues API: `wrangler queues create|list|delete`, `wrangler queues consumer
// add|remove`, and `wrangler deploy` of a config with a producer and a consumer.
for (const version of wranglerVersions()) {
  describe(`wrangler ${version}`, () => {
    let p: TestPlatform;
    before(async () => {
      p = await startPlatform(["--queue-poll-interval", "0.2"]);
    });
    after(async () => {
      await p?.dispose();
    });

    const WORKER = `
export default {
  async fetch(req, env) {
    await env.OUT.send(new URL(req.url).searchParams.get("body"), { contentType: "text" });
    return new Response("sent");
  },
  async queue(batch) {
    for (const m of batch.messages) console.log("WRANGLERQUEUE " + m.body);
  },
};
`;

    const TOML = `name = "wq-worker"
main = "index.js"
compatibility_date = "2024-09-01"

[[queues.producers]]
binding = "OUT"
queue = "wq-jobs"

[[queues.producers]]
binding = "SPARE"
queue = "wq-spare"

[[queues.consumers]]
queue = "wq-jobs"
max_batch_size = 1
max_batch_timeout = 1
`;

    const ok = wranglerSucceeded;

    const settingsOf = async (name: string) => {
      const listed = await p.api("GET", `/accounts/${p.accountId}/queues?name=${name}`);
      return listed.body.result[0]?.settings as { delivery_delay: number; delivery_paused: boolean; message_retention_period: number } | undefined;
    };

    const consumersOf = async (name: string) => {
      const listed = await p.api("GET", `/accounts/${p.accountId}/queues?name=${name}`);
      return listed.body.result[0].consumers as { script?: string; script_name?: string; settings: { batch_size: number } }[];
    };

    test(`wrangler ${version}: queues create, list, delete, consumer add and remove, and deploy with a producer and a consumer`, async () => {
      await withTempDir("wrangler-queues-", async (cwd) => {
        const wrangler = (...args: string[]) => runWrangler(p, args, { version, cwd });
        assert.match(ok(await wrangler("queues", "create", "wq-jobs")).stdout, /Created queue/);
        ok(await wrangler("queues", "create", "wq-spare"));
        ok(await wrangler("queues", "create", "wq-gone"));
        const listed = ok(await wrangler("queues", "list")).stdout;
        for (const name of ["wq-jobs", "wq-spare", "wq-gone"]) assert.match(listed, new RegExp(name));

        // Another account sees none of them.
        const other = await createAccount(p, "wrangler-queues-other");
        const theirs = await runWrangler(p, ["queues", "list"], {
          cwd,
          accountId: other,
          credentials: { CLOUDFLARE_API_KEY: p.apiKey, CLOUDFLARE_EMAIL: p.email },
        });
        assert.equal(theirs.code, 0, theirs.stderr);
        assert.doesNotMatch(theirs.stdout, /wq-jobs/);

        writeFileSync(join(cwd, "wrangler.toml"), TOML);
        writeFileSync(join(cwd, "index.js"), WORKER);
        const deployed = ok(await wrangler("deploy"));
        assert.match(deployed.stdout, /Consumer for wq-jobs/);
        assert.equal((await consumersOf("wq-jobs"))[0]?.script, "wq-worker");
        const jobs = (await p.api("GET", `/accounts/${p.accountId}/queues?name=wq-jobs`)).body.result[0];
        assert.deepEqual([jobs.producers, jobs.producers_total_count], [[{ type: "worker", script: "wq-worker" }], 1]);
        assert.equal((await hit(p, "wq-worker", "/?body=hello")).text, "sent");
        const received = () => logEntries(p).filter((l) => l.msg === "WRANGLERQUEUE hello").length;
        await eventually(() => received() > 0, "the consumer got the message");
        // A second deploy updates the consumer in place.
        ok(await wrangler("deploy"));
        assert.equal((await consumersOf("wq-jobs")).length, 1);

        assert.match(ok(await wrangler("queues", "consumer", "remove", "wq-jobs", "wq-worker")).stdout, /Removed consumer/);
        assert.deepEqual(await consumersOf("wq-jobs"), []);
        ok(await wrangler("queues", "consumer", "add", "wq-jobs", "wq-worker", "--batch-size", "3", "--message-retries", "2"));
        const [added] = await consumersOf("wq-jobs");
        assert.deepEqual([added?.script, added?.settings.batch_size], ["wq-worker", 3]);

        ok(await wrangler("queues", "delete", "wq-gone"));
        assert.doesNotMatch(ok(await wrangler("queues", "list")).stdout, /wq-gone/);
        const missing = await wrangler("queues", "delete", "wq-gone");
        assert.equal(missing.code, 1);
        assert.match(missing.stdout + missing.stderr, /does not exist/);
      });
    });

    test(`wrangler ${version}: queues create with a delivery delay and a retention period, update, pause-delivery and resume-delivery`, async () => {
      await withTempDir("wrangler-queue-settings-", async (cwd) => {
        const wrangler = (...args: string[]) => runWrangler(p, args, { version, cwd });
        ok(await wrangler("queues", "create", "wq-delayed", "--delivery-delay-secs", "5", "--message-retention-period-secs", "3600"));
        assert.deepEqual(await settingsOf("wq-delayed"), { delivery_delay: 5, delivery_paused: false, message_retention_period: 3600 });
        // update sends the settings it is not given as the queue has them.
        ok(await wrangler("queues", "update", "wq-delayed", "--message-retention-period-secs", "120"));
        assert.deepEqual(await settingsOf("wq-delayed"), { delivery_delay: 5, delivery_paused: false, message_retention_period: 120 });
        ok(await wrangler("queues", "update", "wq-delayed", "--delivery-delay-secs", "0"));
        assert.deepEqual(await settingsOf("wq-delayed"), { delivery_delay: 0, delivery_paused: false, message_retention_period: 120 });
        assert.match(ok(await wrangler("queues", "pause-delivery", "wq-delayed")).stdout, /Paused message delivery/);
        assert.equal((await settingsOf("wq-delayed"))?.delivery_paused, true);
        assert.match(ok(await wrangler("queues", "resume-delivery", "wq-delayed")).stdout, /Resumed message delivery/);
        assert.deepEqual(await settingsOf("wq-delayed"), { delivery_delay: 0, delivery_paused: false, message_retention_period: 120 });

        // Another account's wrangler does not find the queue, so cannot change it.
        const other = await createAccount(p, "wrangler-queue-settings-other");
        const theirs = await runWrangler(p, ["queues", "pause-delivery", "wq-delayed"], {
          cwd,
          accountId: other,
          credentials: { CLOUDFLARE_API_KEY: p.apiKey, CLOUDFLARE_EMAIL: p.email },
        });
        assert.equal(theirs.code, 1, theirs.stdout);
        assert.match(theirs.stdout + theirs.stderr, /does not exist/);
        assert.equal((await settingsOf("wq-delayed"))?.delivery_paused, false);
      });
    });
  });
}
