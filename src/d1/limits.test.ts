import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import Cloudflare from "cloudflare";
import { startTestPlatform, type TestPlatform } from "../core/testing/platform.js";
import { createAccount } from "../workers/testing/helpers.js";

// Issue 30, holes 5 and 6: what bounds D1's disk and memory, on a real platform with small caps. Two accounts: A
// (the platform's own) and B, with a token of B's only.
let p: TestPlatform;
let accountB: string;
let asB: Record<string, string>;
before(async () => {
  p = await startTestPlatform({
    args: [
      "--dns-port",
      "0",
      // Long enough that the runaway queries below are surely still running while the caps are probed.
      "--d1-query-timeout",
      "10",
      "--d1-databases-per-account",
      "4",
      "--d1-executor-memory",
      "256",
      "--d1-busy-executors",
      "3",
      "--d1-busy-executors-per-account",
      "2",
    ],
  });
  accountB = await createAccount(p, "d1-limits-b");
  const token = await p.api("POST", "/user/tokens", { name: "b", permissions: ["d1_edit"], account_id: accountB }, p.keyHeaders());
  assert.equal(token.status, 200, JSON.stringify(token.body));
  asB = { authorization: `Bearer ${token.body.result.value}` };
});
after(async () => {
  await p?.dispose();
});

const base = (account: string) => `/accounts/${account}/d1/database`;
const create = (account: string, name: string, headers?: Record<string, string>) => p.api("POST", base(account), { name }, headers);
const query = (account: string, uuid: string, sql: string, headers?: Record<string, string>) =>
  p.api("POST", `${base(account)}/${uuid}/query`, { sql }, headers);
const RUNAWAY = "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT count(*) FROM c";

/** Account A's databases, made once: the cap below is 4 per account. */
const dbs: string[] = [];

test("databases per account are capped: one more is refused with the hosted code 7406, per account, and deleting one makes room", async () => {
  for (const name of ["lim-1", "lim-2", "lim-3", "lim-4"]) {
    const r = await create(p.accountId, name);
    assert.equal(r.status, 200, JSON.stringify(r.body));
    dbs.push(r.body.result.uuid);
  }
  const over = await create(p.accountId, "lim-5");
  assert.equal(over.status, 400, JSON.stringify(over.body));
  assert.equal(over.body.success, false);
  assert.equal(over.body.errors[0].code, 7406);
  assert.match(over.body.errors[0].message, /System limit reached: databases per account \(4\)/);
  // The `cloudflare` SDK sees the hosted error: a 400 carrying code 7406.
  const cf = new Cloudflare({ apiToken: p.token, baseURL: p.apiUrl, maxRetries: 0 });
  await assert.rejects(cf.d1.database.create({ account_id: p.accountId, name: "lim-5" }), (e: unknown) => {
    assert.ok(e instanceof Cloudflare.BadRequestError, String(e));
    assert.equal((e as { errors: { code: number }[] }).errors[0]!.code, 7406);
    return true;
  });
  const listed = await p.api("GET", base(p.accountId));
  assert.equal(listed.body.result.length, 4, "the refused database was not made");
  // B's cap is its own.
  const b = await create(accountB, "b-1", asB);
  assert.equal(b.status, 200, JSON.stringify(b.body));
  // Deleting one makes room for one.
  const spare = await create(accountB, "b-2", asB);
  assert.equal(spare.status, 200);
  assert.equal((await p.api("DELETE", `${base(accountB)}/${spare.body.result.uuid}`, undefined, asB)).status, 200);
});

test("TEMP tables live in the executor's capped memory: one past the cap fails with 'out of memory', leaves nothing behind, and the database works on", async () => {
  const db = dbs[0]!;
  // Small temporary storage works (in memory).
  const small = await query(
    p.accountId,
    db,
    "CREATE TEMP TABLE t (x); WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM c WHERE i < 1000) INSERT INTO t SELECT randomblob(1000) FROM c; SELECT count(*) AS n FROM t",
  );
  assert.equal(small.status, 200, JSON.stringify(small.body));
  assert.deepEqual(small.body.result[2].results, [{ n: 1000 }]);
  // 400 MB of TEMP table: before, written to an unlinked file under /var/tmp that no limit counted (3 GB were).
  // Zeros, not random bytes: on a loaded machine generating 256 MB of randomness outlasted the query time limit.
  const big = await query(
    p.accountId,
    db,
    "CREATE TEMP TABLE big (x); WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM c WHERE i < 400) INSERT INTO big SELECT zeroblob(1000000) FROM c",
  );
  assert.equal(big.status, 400, JSON.stringify(big.body).slice(0, 500));
  assert.match(big.body.errors[0].message, /out of memory/);
  // Nobody can move temporary storage back to files.
  const pragma = await query(p.accountId, db, "PRAGMA temp_store = FILE");
  assert.equal(pragma.status, 400);
  assert.equal(pragma.body.errors[0].code, 7501);
  const after = await query(p.accountId, db, "CREATE TABLE kept (v); INSERT INTO kept VALUES (1); SELECT count(*) AS n FROM kept");
  assert.equal(after.status, 200, JSON.stringify(after.body));
  assert.deepEqual(after.body.result[2].results, [{ n: 1 }]);
});

test("an executor's memory is capped: a 400 MB value fails with 'out of memory' instead of growing the process (SQLite's heap limit was off)", async () => {
  const r = await query(p.accountId, dbs[1]!, "SELECT length(randomblob(400000000)) AS n");
  assert.equal(r.status, 400, JSON.stringify(r.body));
  assert.match(r.body.errors[0].message, /out of memory/);
  const again = await query(p.accountId, dbs[1]!, "SELECT 1 AS one");
  assert.deepEqual(again.body.result[0].results, [{ one: 1 }]);
});

type Answer = Awaited<ReturnType<typeof query>>;

/**
 * Keeps `uuid` busy with a query that runs until the deadline. A probe of the test may hold the place for a moment
 * when the query arrives (it is then refused with 429): it is sent again until it runs.
 */
function occupy(account: string, uuid: string, headers?: Record<string, string>): { done: boolean; answer: Promise<Answer> } {
  const o = { done: false, answer: undefined as unknown as Promise<Answer> };
  const send = (): Promise<Answer> =>
    query(account, uuid, RUNAWAY, headers).then((r) => (r.status === 429 ? new Promise((resolve) => setTimeout(resolve, 10)).then(send) : r));
  o.answer = send().finally(() => (o.done = true));
  return o;
}

/** Asks `probe` until it is refused with 429 and a message matching `why`, while every occupier still runs. */
async function refusedWhileBusy(occupiers: { done: boolean }[], probe: () => Promise<Answer>, why: RegExp): Promise<Answer> {
  while (occupiers.every((o) => !o.done)) {
    const r = await probe();
    if (r.status === 429 && why.test(r.body.errors[0].message)) return r;
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
  assert.fail(`no 429 (${why}) while the busy databases ran`);
}

test("busy executors are capped per account and per node: past a cap a request is refused at once with 429 (7430); a busy database still queues its own requests", async () => {
  // A keeps two databases busy with queries that run until the deadline (10 s here).
  const a1 = occupy(p.accountId, dbs[0]!);
  const a2 = occupy(p.accountId, dbs[1]!);
  // A third database of A is refused: the account's cap is 2.
  const refused = await refusedWhileBusy([a1, a2], () => query(p.accountId, dbs[2]!, "SELECT 1"), /busy for this account: 2/);
  assert.equal(refused.body.errors[0].code, 7430);
  assert.equal(refused.body.success, false);

  // B is not held up by A's cap: its database takes the node's third place.
  const bDb = (await p.api("GET", base(accountB), undefined, asB)).body.result[0].uuid as string;
  const b1 = occupy(accountB, bDb, asB);
  // With three busy, the node's cap refuses B's next database, whatever the account.
  const bSecond = (await create(accountB, "b-3", asB)).body.result.uuid as string;
  const nodeRefused = await refusedWhileBusy([a1, a2, b1], () => query(accountB, bSecond, "SELECT 1", asB), /on this node/);
  assert.equal(nodeRefused.body.errors[0].code, 7430);

  // A request for a database that is already busy waits its turn (no new executor): it runs once the runaway is stopped.
  const queued = query(p.accountId, dbs[0]!, "SELECT 2 AS two");
  for (const o of [a1, a2, b1]) assert.equal((await o.answer).body.errors[0].code, 7429, "the runaways were stopped at their deadline");
  const q = await queued;
  assert.equal(q.status, 200, JSON.stringify(q.body));
  assert.deepEqual(q.body.result[0].results, [{ two: 2 }]);
  // Afterwards every database answers again.
  assert.equal((await query(p.accountId, dbs[2]!, "SELECT 1")).status, 200);
  assert.equal((await query(accountB, bSecond, "SELECT 1", asB)).status, 200);
});
