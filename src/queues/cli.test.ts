import assert from "node:assert/strict";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { after, test } from "node:test";
import { startTestPlatform, type TestPlatform } from "../core/testing/platform.js";
import { hit, logEntries } from "../workers/testing/helpers.js";
import { eventually } from "../core/testing/eventually.js";
import { withTempDir } from "../core/testing/temp-dir.js";

// `edgecli queues` and `edgecli deploy` with [[queues.producers]] and [[queues.consumers]], on the real CLI and
// server; then the queued messages across a platform killed mid-batch and started again on the same state.
const WORKER = `
export default {
  async fetch(req, env) {
    const body = new URL(req.url).searchParams.get("body");
    await env.OUT.send({ body });
    return new Response("queued " + body);
  },
  async queue(batch, env) {
    for (const m of batch.messages) {
      console.log("CLIQUEUE " + JSON.stringify({ queue: batch.queue, body: m.body.body, attempts: m.attempts }));
      // Hangs on its first delivery: the platform is killed meanwhile, and the lease must run out.
      if (m.body.body === "hang" && m.attempts === 1) await new Promise((r) => setTimeout(r, 600_000));
    }
  },
};
`;

const TOML = `name = "cli-worker"
main = "index.js"
compatibility_date = "2024-09-01"

[[queues.producers]]
binding = "OUT"
queue = "cli-q"

[[queues.consumers]]
queue = "cli-q"
max_batch_size = 2
max_batch_timeout = 1
max_retries = 1
dead_letter_queue = "cli-dlq"
`;

const platforms: TestPlatform[] = [];
after(async () => {
  for (const p of platforms) await p.dispose();
});
/** `consumerTimeout` (s) is how long a batch is leased: one whose node died is delivered again that long after it started. */
const start = async (again?: TestPlatform, consumerTimeout = "20") => {
  const p = await startTestPlatform({
    ...(again && { stateDir: again.stateDir, credentials: { accountId: again.accountId, email: again.email, apiKey: again.apiKey, token: again.token } }),
    args: ["--dns-port", "0", "--queue-poll-interval", "0.2", "--queue-consumer-timeout", consumerTimeout],
  });
  platforms.push(p);
  return p;
};

const seen = (p: TestPlatform) =>
  logEntries(p)
    .filter((l) => typeof l.msg === "string" && l.msg.startsWith("CLIQUEUE "))
    .map((l) => JSON.parse(l.msg.slice(9)) as { queue: string; body: string; attempts: number });

const ok = (r: { code: number; stdout: string; stderr: string }) => {
  assert.equal(r.code, 0, r.stderr || r.stdout);
  return r;
};

test("edgecli queues and deploy; messages survive a platform killed mid-batch, and its lease runs out", async () => {
  await withTempDir("queues-cli-", async (cwd) => {
    let p = await start();
    const queues = (...args: string[]) => p.cli(["queues", ...args], { cwd });
    assert.match(ok(await queues("create", "cli-q")).stdout, /Created queue cli-q/);
    ok(await queues("create", "cli-dlq"));
    const bad = await queues("create", "Not_Valid");
    assert.equal(bad.code, 1);
    assert.match(bad.stderr, /lowercase letters, digits and "-"/);
    const listed = JSON.parse(ok(await queues("list", "--json")).stdout) as { queue_name: string }[];
    assert.deepEqual(listed.map((q) => q.queue_name).sort(), ["cli-dlq", "cli-q"]);

    // Queue settings: create with them, update one (the other stays), pause and resume; out of range refused.
    ok(await queues("create", "cli-settings", "--delivery-delay-secs", "5", "--message-retention-period-secs", "3600"));
    assert.match(ok(await queues("info", "cli-settings")).stdout, /Settings: delivery delay 5 s, retention 3600 s, delivery running/);
    assert.match(ok(await queues("update", "cli-settings", "--message-retention-period-secs", "120")).stdout, /delivery delay 5 s, retention 120 s/);
    ok(await queues("pause-delivery", "cli-settings"));
    assert.match(ok(await queues("info", "cli-settings")).stdout, /delivery paused/);
    ok(await queues("resume-delivery", "cli-settings"));
    assert.match(ok(await queues("info", "cli-settings")).stdout, /retention 120 s, delivery running/);
    const outOfRange = await queues("update", "cli-settings", "--message-retention-period-secs", "10");
    assert.equal(outOfRange.code, 1);
    assert.match(outOfRange.stderr, /message_retention_period/);
    ok(await queues("delete", "cli-settings", "-y"));

    // A consumer of a queue that does not exist is refused before anything is uploaded.
    writeFileSync(join(cwd, "wrangler.toml"), TOML.replace('queue = "cli-q"\nmax_batch_size', 'queue = "nope"\nmax_batch_size'));
    writeFileSync(join(cwd, "index.js"), WORKER);
    const refused = await p.cli(["deploy"], { cwd });
    assert.equal(refused.code, 1);
    assert.match(refused.stderr, /Queue "nope" does not exist/);

    writeFileSync(join(cwd, "wrangler.toml"), TOML);
    const deployed = ok(await p.cli(["deploy"], { cwd }));
    assert.match(deployed.stdout, /Consumer for cli-q/);
    const info = ok(await queues("info", "cli-q")).stdout;
    assert.match(info, /Consumer: worker cli-worker \(batch size 2, batch timeout 1000 ms, retries 1, retry delay 0 s, dead letter queue cli-dlq\)/);

    assert.equal((await hit(p, "cli-worker", "/?body=first")).text, "queued first");
    await eventually(() => seen(p).some((s) => s.body === "first"), "the first message delivered");

    // The consumer hangs on "hang"; "waiting", sent meanwhile, waits behind that batch; then the platform is killed.
    assert.equal((await hit(p, "cli-worker", "/?body=hang")).text, "queued hang");
    await eventually(() => seen(p).some((s) => s.body === "hang"), "the hanging delivery started");
    assert.equal((await hit(p, "cli-worker", "/?body=waiting")).text, "queued waiting");
    p.process.kill("SIGKILL");
    await new Promise((r) => p.process.once("exit", r));

    // Its own deliveries get a generous time limit; the hanging batch's lease is the killed platform's (20 s).
    p = await start(p, "120");
    // The log is the new process's: nothing the killed one logged. "waiting" was never delivered, so the new
    // process may already have delivered it by the time the log is read; the hanging batch waits out its lease.
    assert.deepEqual(
      seen(p).filter((s) => s.body !== "waiting"),
      [],
      "a fresh process log",
    );
    await eventually(() => seen(p).some((s) => s.body === "waiting") && seen(p).some((s) => s.body === "hang"), "both messages after the restart", 180_000);
    const after = seen(p);
    assert.deepEqual(after.find((s) => s.body === "hang")?.attempts, 2, "the hanging batch was delivered again once its lease ran out");
    assert.deepEqual(after.find((s) => s.body === "waiting")?.attempts, 1);
    assert.ok(!after.some((s) => s.body === "first"), "an acknowledged message does not come back");

    ok(await p.cli(["queues", "consumer", "add", "cli-q", "cli-worker", "--batch-size", "5", "--message-retries", "2"], { cwd }));
    assert.match(ok(await queues("info", "cli-q")).stdout, /batch size 5, batch timeout 5000 ms, retries 2/);
    ok(await p.cli(["queues", "consumer", "remove", "cli-q", "cli-worker"], { cwd }));
    assert.match(ok(await p.cli(["queues", "delete", "cli-dlq", "-y"], { cwd })).stdout, /Deleted queue cli-dlq/);
    const gone = await p.cli(["queues", "info", "cli-dlq"], { cwd });
    assert.equal(gone.code, 1);
    assert.match(gone.stderr, /does not exist/);
  });
});
