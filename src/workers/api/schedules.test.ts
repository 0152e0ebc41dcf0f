import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import type { TestPlatform } from "../../core/testing/platform.js";
import { createAccount, startPlatform, uploadScript } from "../testing/helpers.js";

let p: TestPlatform;
before(async () => {
  p = await startPlatform();
});
after(() => p?.dispose());

const worker = `export default { scheduled() {}, fetch() { return new Response("ok"); } };`;
const schedulesOf = (name: string, accountId = p.accountId) => `/accounts/${accountId}/workers/scripts/${name}/schedules`;

test("schedules: GET and PUT answer the hosted shape; PUT replaces, keeps created_on of a kept trigger, and gives each cron once", async () => {
  assert.equal((await uploadScript(p, "sched", worker)).status, 200);
  const empty = await p.api("GET", schedulesOf("sched"));
  assert.equal(empty.status, 200);
  assert.deepEqual(empty.body.result, { schedules: [] });

  const put = await p.api("PUT", schedulesOf("sched"), [{ cron: "*/5 * * * *" }, { cron: "0 0 * * mon" }, { cron: "*/5 * * * *" }]);
  assert.equal(put.status, 200, JSON.stringify(put.body));
  const schedules = put.body.result.schedules as { cron: string; created_on: string; modified_on: string }[];
  assert.deepEqual(
    schedules.map((s) => s.cron),
    ["*/5 * * * *", "0 0 * * mon"],
  );
  for (const s of schedules) {
    assert.deepEqual(Object.keys(s).sort(), ["created_on", "cron", "modified_on"]);
    assert.ok(!Number.isNaN(Date.parse(s.created_on)));
  }
  assert.deepEqual((await p.api("GET", schedulesOf("sched"))).body.result, put.body.result);

  const replaced = await p.api("PUT", schedulesOf("sched"), [{ cron: "*/5 * * * *" }, { cron: "30 2 * * *" }]);
  assert.deepEqual(
    replaced.body.result.schedules.map((s: { cron: string }) => s.cron),
    ["*/5 * * * *", "30 2 * * *"],
  );
  assert.equal(replaced.body.result.schedules[0].created_on, schedules[0].created_on);

  // A new version keeps the triggers (as on the hosted platform: only a PUT of schedules changes them).
  assert.equal((await uploadScript(p, "sched", worker)).status, 200);
  assert.equal((await p.api("GET", schedulesOf("sched"))).body.result.schedules.length, 2);
  assert.deepEqual((await p.api("PUT", schedulesOf("sched"), [])).body.result, { schedules: [] });
});

test("schedules: an invalid cron is a 400 naming it, a malformed body a 400, too many a 400; nothing changes", async () => {
  assert.equal((await uploadScript(p, "sched-bad", worker)).status, 200);
  await p.api("PUT", schedulesOf("sched-bad"), [{ cron: "0 * * * *" }]);
  const bad = await p.api("PUT", schedulesOf("sched-bad"), [{ cron: "1 * * * *" }, { cron: "61 * * * *" }]);
  assert.equal(bad.status, 400);
  assert.equal(bad.body.errors[0].code, 10021);
  assert.match(bad.body.errors[0].message, /invalid cron expression "61 \* \* \* \*": .*minute/);
  assert.equal(bad.body.errors[0].source?.pointer, "/1/cron");
  for (const body of [{ cron: "* * * * *" }, ["* * * * *"], [{ expression: "* * * * *" }], [null]]) {
    const r = await p.api("PUT", schedulesOf("sched-bad"), body);
    assert.equal(r.status, 400, JSON.stringify(body));
    assert.match(r.body.errors[0].message, /JSON array of cron triggers/);
  }
  for (const cron of ["* * * *", "0 0 * * * *", "@daily", "0 0 31 2 *"]) {
    assert.equal((await p.api("PUT", schedulesOf("sched-bad"), [{ cron }])).status, 400, cron);
  }
  const many = Array.from({ length: 251 }, (_, i) => ({ cron: `${i % 60} ${Math.floor(i / 60)} * * *` }));
  const tooMany = await p.api("PUT", schedulesOf("sched-bad"), many);
  assert.equal(tooMany.status, 400);
  assert.match(tooMany.body.errors[0].message, /at most 250 cron triggers/);
  // The limit counts the account's other Workers too.
  assert.equal((await uploadScript(p, "sched-many", worker)).status, 200);
  assert.equal((await p.api("PUT", schedulesOf("sched-many"), many.slice(0, 249))).status, 200);
  const over = await p.api("PUT", schedulesOf("sched-bad"), [{ cron: "1 * * * *" }, { cron: "2 * * * *" }]);
  assert.equal(over.status, 400);
  assert.match(over.body.errors[0].message, /at most 250 cron triggers across its Workers; this change would make it 251/);
  assert.deepEqual(
    (await p.api("GET", schedulesOf("sched-bad"))).body.result.schedules.map((s: { cron: string }) => s.cron),
    ["0 * * * *"],
    "refused changes changed nothing",
  );
  assert.equal((await p.api("PUT", schedulesOf("sched-many"), [])).status, 200);
});

test("schedules: a missing or deleted Worker is a 404; another account's Worker is out of reach", async () => {
  assert.equal((await p.api("GET", schedulesOf("no-such-worker"))).status, 404);
  assert.equal((await p.api("PUT", schedulesOf("no-such-worker"), [{ cron: "* * * * *" }])).status, 404);
  assert.equal((await uploadScript(p, "sched-mine", worker)).status, 200);
  assert.equal((await p.api("PUT", schedulesOf("sched-mine"), [{ cron: "* * * * *" }])).status, 200);

  const otherId = await createAccount(p, "Schedules neighbour");
  const token = (await p.api("POST", "/user/tokens", { name: "neighbour", permissions: ["workers_read", "workers_edit"], account_id: otherId }, p.keyHeaders()))
    .body.result.value as string;
  const asNeighbour = { authorization: `Bearer ${token}` };
  const theirs = await p.api("GET", schedulesOf("sched-mine"), undefined, asNeighbour);
  assert.equal(theirs.status, 403, "an account the token does not reach is refused like one that does not exist");
  assert.equal((await p.api("PUT", schedulesOf("sched-mine"), [], asNeighbour)).status, 403);
  assert.equal((await p.api("GET", schedulesOf("sched-mine", otherId), undefined, asNeighbour)).status, 404, "not in their account");
  assert.equal((await p.api("PUT", schedulesOf("sched-mine", otherId), [], asNeighbour)).status, 404);
  assert.equal((await p.api("GET", schedulesOf("sched-mine"))).body.result.schedules.length, 1, "still there");

  assert.equal((await p.api("DELETE", `/accounts/${p.accountId}/workers/scripts/sched-mine`)).status, 200);
  assert.equal((await p.api("GET", schedulesOf("sched-mine"))).status, 404);
});
