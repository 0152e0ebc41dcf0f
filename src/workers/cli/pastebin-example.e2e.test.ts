import assert from "node:assert/strict";
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { after, before, test } from "node:test";
import type { TestPlatform } from "../../core/testing/platform.js";
import { hit, logEntries, startPlatform } from "../testing/helpers.js";
import { eventually } from "../../core/testing/eventually.js";
import { runWrangler } from "../testing/wrangler.js";

/** examples/pastebin, set up and deployed the way its README says, then used over HTTP until a cron sweep ran. */
const EXAMPLE = fileURLToPath(new URL("../../../examples/pastebin", import.meta.url));
const PLACEHOLDER = "<the database_id that edgecli d1 create pastebin-db prints>";

let p: TestPlatform;
let project: string;
before(async () => {
  p = await startPlatform();
  project = mkdtempSync(join(tmpdir(), "pastebin-"));
  cpSync(EXAMPLE, project, { recursive: true });
});
after(async () => {
  await p?.dispose();
  rmSync(project, { recursive: true, force: true });
});

/** A hang guard only: waiting for a minute's cron tick on a busy machine. */
const TICK_WAIT_MS = 200_000;

const json = async (path: string) => {
  const r = await hit(p, "pastebin", path);
  assert.equal(r.status, 200, r.text);
  return JSON.parse(r.text);
};

test(
  "examples/pastebin: d1 create, migrations apply, deploy; pastes in D1, views in a Durable Object, expired pastes swept by the cron trigger",
  { timeout: 600_000 },
  async () => {
    const created = await p.cli(["d1", "create", "pastebin-db"], { cwd: project });
    assert.equal(created.code, 0, created.stderr);
    const uuid = /database_id = "([0-9a-f-]{36})"/.exec(created.stdout)?.[1];
    assert.ok(uuid, created.stdout);
    const configPath = join(project, "wrangler.toml");
    const config = readFileSync(configPath, "utf8");
    assert.ok(config.includes(PLACEHOLDER), "the README's placeholder is in the config");
    writeFileSync(configPath, config.replace(PLACEHOLDER, uuid));

    const migrated = await p.cli(["d1", "migrations", "apply", "pastebin-db"], { cwd: project });
    assert.equal(migrated.code, 0, migrated.stderr);
    const queue = await p.cli(["queues", "create", "pastebin-new"], { cwd: project });
    assert.equal(queue.code, 0, queue.stderr);
    const deployed = await p.cli(["deploy"], { cwd: project });
    assert.equal(deployed.code, 0, deployed.stderr);
    assert.match(deployed.stdout, /- VIEWS: ViewCounter/);
    assert.match(deployed.stdout, new RegExp(`- DB: pastebin-db \\(${uuid}\\)`));
    assert.match(deployed.stdout, /schedule: \* \* \* \* \*/);

    // A paste kept in D1; each view counted by the paste's Durable Object.
    const post = await hit(p, "pastebin", "/pastes", { method: "POST", body: "hello from D1" });
    assert.equal(post.status, 201, post.text);
    const kept = JSON.parse(post.text);
    assert.match(kept.id, /^[0-9a-f]{12}$/);
    assert.equal(kept.expires_at, null);
    // The paste announced on the queue, received by the Worker's queue() handler.
    await eventually(
      async () => logEntries(p).some((l) => typeof l.msg === "string" && l.msg.includes(`new paste ${kept.id}: 13 bytes`)),
      "the queue consumer's log line for the new paste",
      TICK_WAIT_MS,
    );
    const first = await hit(p, "pastebin", `/pastes/${kept.id}`);
    assert.equal(first.status, 200);
    assert.equal(first.text, "hello from D1");
    assert.equal(first.headers["x-views"], "1");
    const views = await Promise.all(Array.from({ length: 5 }, () => hit(p, "pastebin", `/pastes/${kept.id}`)));
    assert.deepEqual(views.map((v) => Number(v.headers["x-views"])).sort(), [2, 3, 4, 5, 6], "concurrent views each counted once");
    assert.equal((await hit(p, "pastebin", "/pastes/000000000000")).status, 404);
    assert.equal((await hit(p, "pastebin", "/pastes", { method: "POST", body: "x".repeat(64 * 1024 + 1) })).status, 413);
    assert.equal((await hit(p, "pastebin", "/pastes?ttl=soon", { method: "POST", body: "x" })).status, 400);

    // A paste that expires in a second: 404 once it has, and the next cron sweep deletes its row.
    const shortLived = JSON.parse((await hit(p, "pastebin", "/pastes?ttl=1", { method: "POST", body: "gone soon" })).text);
    assert.deepEqual(
      (await json("/pastes")).map((x: { id: string }) => x.id),
      [shortLived.id, kept.id],
    );
    await eventually(async () => (await hit(p, "pastebin", `/pastes/${shortLived.id}`)).status === 404, "the short-lived paste to expire");
    await eventually(
      async () => {
        const s = await json("/stats");
        return s.last_sweep !== null && s.last_sweep.at >= shortLived.expires_at && s.pastes === 1;
      },
      "a cron sweep that removed it",
      TICK_WAIT_MS,
    );
    const rows = await p.api("POST", `/accounts/${p.accountId}/d1/database/${uuid}/query`, { sql: "SELECT id FROM pastes" });
    assert.deepEqual(rows.body.result[0].results, [{ id: kept.id }]);
    const swept = await p.api("POST", `/accounts/${p.accountId}/d1/database/${uuid}/query`, { sql: "SELECT sum(removed) AS removed FROM sweeps" });
    assert.equal(swept.body.result[0].results[0].removed, 1);
    assert.equal((await hit(p, "pastebin", `/pastes/${kept.id}`)).headers["x-views"], "7", "the kept paste and its count are untouched");

    // The README's other way: wrangler 3 deploys the same directory over it (its migration tag is already applied).
    const redeployed = await runWrangler(p, ["deploy"], { cwd: project });
    assert.equal(redeployed.code, 0, redeployed.stdout + redeployed.stderr);
    assert.match(redeployed.stdout, /schedule: \* \* \* \* \*/);
    assert.equal((await hit(p, "pastebin", `/pastes/${kept.id}`)).headers["x-views"], "8", "D1 and the object's state kept");
  },
);
