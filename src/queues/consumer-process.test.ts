import assert from "node:assert/strict";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, test } from "node:test";
import Cloudflare from "cloudflare";
import { request } from "undici";
import type { TestPlatform } from "../core/testing/platform.js";
import { createAccount, hit, logEntries, startPlatform, uploadScript } from "../workers/testing/helpers.js";
import { eventually } from "../core/testing/eventually.js";
import { withTempDir } from "../core/testing/temp-dir.js";

// Only a queue consumer's workerd runs the queue dispatcher, whose compatibility flag is experimental, and so
// only it runs with --experimental; uploads asking for experimental flags are refused. Becoming or ceasing to be a
// consumer restarts the script's workerd without dropping a request; deleting a Worker removes its consumers; purge.
let p: TestPlatform;

const WORKER = `
export default {
  async fetch(req, env) {
    const u = new URL(req.url);
    if (u.pathname === "/send") {
      await env.OUT.send(u.searchParams.get("body"), { contentType: "text" });
      return new Response("sent");
    }
    return new Response("ok");
  },
  async queue(batch) {
    for (const m of batch.messages) console.log("PROCQUEUE " + m.body);
  },
};
`;

/**
 * Waits until the workerd that runs `script` now (the last one logged live for it) does, or does not, run with
 * --experimental. The log line of a (re)start may follow the API's answer by a moment, so the check polls; it fails
 * when the expected process never shows up.
 */
async function untilExperimental(script: string, experimental: boolean, why: string): Promise<void> {
  let last = "no live workerd logged";
  try {
    await eventually(() => {
      const live = logEntries(p).filter((l) => l.script === script && (l.msg === "worker version live" || l.msg === "workerd restarted"));
      const pid = live.at(-1)?.workerd_pid as number | undefined;
      if (!pid) return false;
      let cmd: string[];
      try {
        cmd = readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0");
      } catch {
        return false; // a process that just ended: its successor's line is on its way
      }
      last = cmd.join(" ");
      return cmd.includes("--experimental") === experimental;
    }, why);
  } catch (err) {
    assert.fail(`${(err as Error).message}; last command line: ${last}`);
  }
}

const received = () =>
  logEntries(p)
    .filter((l) => typeof l.msg === "string" && l.msg.startsWith("PROCQUEUE "))
    .map((l) => (l.msg as string).slice("PROCQUEUE ".length));

async function createQueue(name: string, accountId = p.accountId, headers?: Record<string, string>): Promise<string> {
  const r = await p.api("POST", `/accounts/${accountId}/queues`, { queue_name: name }, headers);
  assert.equal(r.status, 200, JSON.stringify(r.body));
  return r.body.result.queue_id;
}

/** Sends requests to `script` until `during` settles; every one must be answered 200. */
async function underTraffic<T>(script: string, during: Promise<T>): Promise<{ result: T; statuses: number[] }> {
  let done = false;
  const statuses: number[] = [];
  const client = async () => {
    while (!done) statuses.push((await hit(p, script, "/")).status);
  };
  const clients = Array.from({ length: 4 }, client);
  try {
    return { result: await during, statuses };
  } finally {
    done = true;
    await Promise.all(clients);
  }
}

before(async () => {
  p = await startPlatform(["--queue-poll-interval", "0.2"]);
});
after(async () => {
  await p?.dispose();
});

test("only a queue consumer's workerd runs with --experimental; becoming and ceasing to be one drops no request", async () => {
  const q = await createQueue("proc-q");
  const up = await uploadScript(p, "proc-worker", WORKER, { bindings: [{ type: "queue", name: "OUT", queue_name: "proc-q" }] });
  assert.equal(up.status, 200, JSON.stringify(up.body));
  await untilExperimental("proc-worker", false, "a script that consumes no queue runs without --experimental");

  const added = await underTraffic(
    "proc-worker",
    p.api("POST", `/accounts/${p.accountId}/queues/${q}/consumers`, { script_name: "proc-worker", settings: { batch_size: 1, max_wait_time_ms: 100 } }),
  );
  assert.equal(added.result.status, 200, JSON.stringify(added.result.body));
  assert.ok(added.statuses.length > 0);
  assert.deepEqual(
    added.statuses.filter((s) => s !== 200),
    [],
    "every request during the restart answered",
  );
  await untilExperimental("proc-worker", true, "the consumer runs the dispatcher");
  assert.equal((await hit(p, "proc-worker", "/send?body=first")).text, "sent");
  await eventually(() => received().includes("first"), "the consumer's queue() got the message");

  const removed = await underTraffic("proc-worker", p.api("DELETE", `/accounts/${p.accountId}/queues/${q}/consumers/${added.result.body.result.consumer_id}`));
  assert.equal(removed.result.status, 200, JSON.stringify(removed.result.body));
  assert.deepEqual(
    removed.statuses.filter((s) => s !== 200),
    [],
  );
  await untilExperimental("proc-worker", false, "no longer a consumer");
  // Messages wait for a consumer again.
  assert.equal((await hit(p, "proc-worker", "/send?body=waits")).text, "sent");
  const metrics = await p.api("GET", `/accounts/${p.accountId}/queues/${q}/metrics`);
  assert.equal(metrics.body.result.backlog_count, 1);
});

test("an upload asking for an experimental compatibility flag is refused, naming it, and nothing is deployed", async () => {
  for (const flag of ["service_binding_extra_handlers", "experimental"]) {
    const up = await uploadScript(p, "wants-experimental", WORKER, { compatibility_flags: ["nodejs_compat", flag] });
    assert.equal(up.status, 400, JSON.stringify(up.body));
    assert.equal(up.body.success, false);
    assert.match(up.body.errors[0].message, new RegExp(`"${flag}" is an experimental compatibility flag`));
  }
  const got = await p.api("GET", `/accounts/${p.accountId}/workers/scripts/wants-experimental/settings`);
  assert.equal(got.status, 404);
  assert.equal((await hit(p, "wants-experimental", "/")).status, 404);
  // edgecli deploy goes through the same upload: refused, naming the flag, exit code 1.
  await withTempDir("experimental-deploy-", async (cwd) => {
    writeFileSync(join(cwd, "index.js"), WORKER);
    writeFileSync(
      join(cwd, "wrangler.toml"),
      `name = "wants-experimental"\nmain = "index.js"\ncompatibility_date = "2024-09-01"\ncompatibility_flags = ["js_rpc"]\n`,
    );
    const deployed = await p.cli(["deploy"], { cwd });
    assert.equal(deployed.code, 1, deployed.stdout);
    assert.match(deployed.stderr, /"js_rpc" is an experimental compatibility flag/);
  });
  // A flag that is not experimental is taken.
  const fine = await uploadScript(p, "wants-experimental", WORKER, { compatibility_flags: ["nodejs_compat"] });
  assert.equal(fine.status, 200, JSON.stringify(fine.body));
});

test("deleting a Worker removes its consumers", async () => {
  const q = await createQueue("del-q");
  const up = await uploadScript(p, "del-worker", WORKER, { bindings: [{ type: "queue", name: "OUT", queue_name: "del-q" }] });
  assert.equal(up.status, 200, JSON.stringify(up.body));
  const c = await p.api("POST", `/accounts/${p.accountId}/queues/${q}/consumers`, { script_name: "del-worker" });
  assert.equal(c.status, 200, JSON.stringify(c.body));
  const del = await p.api("DELETE", `/accounts/${p.accountId}/workers/scripts/del-worker`);
  assert.equal(del.status, 200, JSON.stringify(del.body));
  const after = await p.api("GET", `/accounts/${p.accountId}/queues/${q}/consumers`);
  assert.deepEqual(after.body.result, []);
  // The queue takes a new consumer (it had one per queue).
  const again = await uploadScript(p, "del-worker-2", WORKER, { bindings: [{ type: "queue", name: "OUT", queue_name: "del-q" }] });
  assert.equal(again.status, 200, JSON.stringify(again.body));
  assert.equal((await p.api("POST", `/accounts/${p.accountId}/queues/${q}/consumers`, { script_name: "del-worker-2" })).status, 200);
});

test("a purge deletes the queue's messages, once confirmed, in its own account only", async () => {
  const q = await createQueue("purge-q");
  const send = await p.api("POST", `/accounts/${p.accountId}/queues/${q}/messages/batch`, { messages: [{ body: 1 }, { body: 2 }] });
  assert.equal(send.status, 200, JSON.stringify(send.body));
  const backlog = async () => (await p.api("GET", `/accounts/${p.accountId}/queues/${q}/metrics`)).body.result.backlog_count;
  assert.equal(await backlog(), 2);

  const other = await createAccount(p, "purge-other");
  const theirs = await p.api("POST", `/accounts/${other}/queues/${q}/purge`, { delete_messages_permanently: true }, p.keyHeaders());
  assert.equal(theirs.status, 404, JSON.stringify(theirs.body));
  const unconfirmed = await p.api("POST", `/accounts/${p.accountId}/queues/${q}/purge`, {});
  assert.equal(unconfirmed.status, 400, JSON.stringify(unconfirmed.body));
  assert.match(unconfirmed.body.errors[0].message, /delete_messages_permanently/);
  // A body without a JSON content type (wrangler 3 sends them so) is read as JSON; one that is not JSON is a 400.
  const asText = (body: string) =>
    request(`${p.apiUrl}/accounts/${p.accountId}/queues/${q}/purge`, { method: "POST", headers: { ...p.headers(), "content-type": "text/plain" }, body });
  const broken = await asText("{not json");
  assert.equal(broken.statusCode, 400);
  assert.match(((await broken.body.json()) as { errors: { message: string }[] }).errors[0]!.message, /Malformed JSON/);
  assert.equal(await backlog(), 2);

  // The purge status (the cloudflare SDK's queues.purge.status): nothing before the first purge, then the last one, complete.
  const cf = new Cloudflare({ apiToken: p.token, baseURL: p.apiUrl, maxRetries: 0 });
  assert.deepEqual(await cf.queues.purge.status(q, { account_id: p.accountId }), {});
  const theirStatus = await p.api("GET", `/accounts/${other}/queues/${q}/purge`, undefined, p.keyHeaders());
  assert.equal(theirStatus.status, 404, JSON.stringify(theirStatus.body));

  const purgeSentAt = Date.now();
  const purged = await asText(JSON.stringify({ delete_messages_permanently: true }));
  assert.equal(purged.statusCode, 200);
  assert.equal(((await purged.body.json()) as { result: { queue_name: string } }).result.queue_name, "purge-q");
  assert.equal(await backlog(), 0);
  const status = await cf.queues.purge.status(q, { account_id: p.accountId });
  assert.equal(status.completed, "true");
  const startedAt = Date.parse(status.started_at ?? "");
  assert.ok(startedAt >= purgeSentAt && startedAt <= Date.now(), `started_at ${status.started_at}`);
});

test("edgecli queues purge: refused without a terminal unless --force, then the queue is empty", async () => {
  const q = await createQueue("cli-purge-q");
  assert.equal((await p.api("POST", `/accounts/${p.accountId}/queues/${q}/messages`, { body: "x" })).status, 200);
  const backlog = async () => (await p.api("GET", `/accounts/${p.accountId}/queues/${q}/metrics`)).body.result.backlog_count;
  const asked = await p.cli(["queues", "purge", "cli-purge-q"]);
  assert.equal(asked.code, 1, asked.stdout);
  assert.match(asked.stderr, /pass --force/);
  assert.equal(await backlog(), 1);
  const forced = await p.cli(["queues", "purge", "cli-purge-q", "--force"]);
  assert.equal(forced.code, 0, forced.stderr);
  assert.match(forced.stdout, /Purged queue 'cli-purge-q'/);
  assert.equal(await backlog(), 0);
  const unknown = await p.cli(["queues", "purge", "no-such-q", "--force"]);
  assert.equal(unknown.code, 1);
  assert.match(unknown.stderr, /does not exist/);
});
