import assert from "node:assert/strict";
import { existsSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { runCli, startTestPlatform, type CliResult, type TestPlatform } from "../testing/platform.js";

// A new user's first commands, on the real `edgecli` with no terminal (stdin and stdout are pipes): destructive
// commands refuse the same way without their "do not ask" flag, --local does not invent a state directory, and a
// refusal shows the server's own reason.
let p: TestPlatform;
let work: string;
before(async () => {
  p = await startTestPlatform();
  work = mkdtempSync(join(tmpdir(), "first-hour-"));
});
after(async () => {
  await p?.dispose();
  if (work) rmSync(work, { recursive: true, force: true });
});

const ok = (r: CliResult) => {
  assert.equal(r.code, 0, `exit ${r.code}\nstdout: ${r.stdout}\nstderr: ${r.stderr}`);
  return r;
};
/** Refused: exit 1, the question and the flag that skips it on stderr, nothing on stdout that claims success. */
const refused = (r: CliResult, flag: RegExp) => {
  assert.equal(r.code, 1, `expected a refusal\nstdout: ${r.stdout}\nstderr: ${r.stderr}`);
  assert.match(r.stderr, /no terminal to ask on/);
  assert.match(r.stderr, flag);
  assert.doesNotMatch(r.stdout, /Deleted|Purged|Success/);
};

test("without a terminal every destructive command refuses unless told not to ask, and deletes nothing", async () => {
  // KV namespace
  const ns = (await p.api("POST", `/accounts/${p.accountId}/storage/kv/namespaces`, { title: "fh-ns" })).body.result.id as string;
  refused(await p.cli(["kv", "namespace", "delete", "--namespace-id", ns]), /--skip-confirmation \(-y\)/);
  assert.equal((await p.api("GET", `/accounts/${p.accountId}/storage/kv/namespaces/${ns}`)).status, 200);
  ok(await p.cli(["kv", "namespace", "delete", "--namespace-id", ns, "-y"]));
  assert.equal((await p.api("GET", `/accounts/${p.accountId}/storage/kv/namespaces/${ns}`)).status, 404);

  // DNS zone (it used to answer "no" and exit 0)
  ok(await p.cli(["dns", "zone", "create", "first-hour.example"]));
  refused(await p.cli(["dns", "zone", "delete", "first-hour.example"]), /--yes \(-y\)/);
  assert.equal((await p.api("GET", "/zones?name=first-hour.example")).body.result.length, 1);
  ok(await p.cli(["dns", "zone", "delete", "first-hour.example", "-y"]));
  assert.equal((await p.api("GET", "/zones?name=first-hour.example")).body.result.length, 0);

  // D1 database
  ok(await p.cli(["d1", "create", "fh-db"]));
  refused(await p.cli(["d1", "delete", "fh-db"]), /--skip-confirmation \(-y\)/);
  const dbs = async () => (await p.api("GET", `/accounts/${p.accountId}/d1/database?name=fh-db`)).body.result.length;
  assert.equal(await dbs(), 1);
  ok(await p.cli(["d1", "delete", "fh-db", "-y"]));
  assert.equal(await dbs(), 0);

  // Queue: purge and delete
  ok(await p.cli(["queues", "create", "fh-q"]));
  refused(await p.cli(["queues", "purge", "fh-q"]), /--force/);
  refused(await p.cli(["queues", "delete", "fh-q"]), /--skip-confirmation \(-y\)/);
  ok(await p.cli(["queues", "purge", "fh-q", "--force"]));
  ok(await p.cli(["queues", "delete", "fh-q", "-y"]));
  assert.doesNotMatch(ok(await p.cli(["queues", "list"])).stdout, /fh-q/);
});

test("a malformed token: the CLI shows the server's reason, not only 'Invalid request headers'", async () => {
  const r = await p.cli(["kv", "namespace", "list"], { env: { EDGE_API_TOKEN: "not a token" } });
  assert.equal(r.code, 1);
  assert.match(r.stderr, /Invalid request headers \[code: 6003\]/);
  assert.match(r.stderr, /Invalid format for Authorization header \[code: 6111\]/);
});

test("--local where there is no state directory says so, exits 1 and creates nothing", async () => {
  const empty = mkdtempSync(join(work, "no-state-"));
  const env = { EDGE_API_URL: p.apiUrl, EDGE_API_TOKEN: p.token, EDGE_ACCOUNT_ID: p.accountId };
  for (const args of [
    ["kv", "key", "put", "k", "v", "--namespace-id", "0f2ac74b498b48028cb68387c421e279", "--local"],
    ["kv", "key", "get", "k", "--namespace-id", "0f2ac74b498b48028cb68387c421e279", "--local"],
    ["d1", "execute", "some-db", "--command", "SELECT 1", "--local"],
  ]) {
    const r = await runCli(args, { cwd: empty, env });
    assert.equal(r.code, 1, `${args.join(" ")}\nstdout: ${r.stdout}\nstderr: ${r.stderr}`);
    assert.match(r.stderr, /--local: there is no state directory at .*\.edge \(from the default, \.\/\.edge\); nothing was created/);
    assert.deepEqual(readdirSync(empty), [], "nothing created");
  }
  const missing = join(empty, "elsewhere");
  const viaFlag = await runCli(["kv", "key", "get", "k", "--namespace-id", "x", "--local", "--persist-to", missing], { cwd: empty, env });
  assert.equal(viaFlag.code, 1);
  assert.match(viaFlag.stderr, /from --persist-to/);
  const viaEnv = await runCli(["kv", "key", "get", "k", "--namespace-id", "x", "--local"], { cwd: empty, env: { ...env, EDGE_STATE_DIR: missing } });
  assert.equal(viaEnv.code, 1);
  assert.match(viaEnv.stderr, /from EDGE_STATE_DIR/);
  assert.equal(existsSync(missing), false);

  // An existing state directory still works (the server's, handed over by EDGE_STATE_DIR).
  writeFileSync(join(empty, "v.txt"), "local value");
  ok(await p.cli(["kv", "key", "put", "k", "--path", join(empty, "v.txt"), "--namespace-id", "0f2ac74b498b48028cb68387c421e279", "--local"]));
  assert.equal(ok(await p.cli(["kv", "key", "get", "k", "--namespace-id", "0f2ac74b498b48028cb68387c421e279", "--local"])).stdout, "local value");
});
