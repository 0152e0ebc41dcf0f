import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { createReadStream, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync, openSync, writeSync, closeSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startTestPlatform, type TestPlatform } from "../core/testing/platform.js";
import { runOnTerminal, terminalAvailable } from "../core/testing/terminal.js";

/** The real `edgecli r2 …` binary against a real server. */
let p: TestPlatform;
let work: string;
before(async () => {
  // The young generation's size is fixed so the RSS check below measures buffering, not how much garbage a Node
  // version lets accumulate (Node 24's default lets a streamed 64 MiB raise the peak by 65 MiB, Node 20's by 35).
  p = await startTestPlatform({ nodeArgs: ["--max-semi-space-size=8"] });
  work = mkdtempSync(join(tmpdir(), "r2-cli-"));
});
after(async () => {
  await p?.dispose();
  rmSync(work, { recursive: true, force: true });
});

const cli = (args: string[], input?: string | Buffer) => p.cli(args, { cwd: work, input });

test("bucket create, list, delete with wrangler-like output", async () => {
  const created = await cli(["r2", "bucket", "create", "cli-bucket"]);
  assert.equal(created.code, 0, created.stderr);
  assert.match(created.stdout, /Creating bucket 'cli-bucket'\.\.\./);
  assert.match(created.stdout, /✅ Created bucket 'cli-bucket' with default storage class of Standard\./);
  assert.match(created.stdout, /\[\[r2_buckets\]\]\nbucket_name = "cli-bucket"\nbinding = "cli_bucket"/);

  const hinted = await cli(["r2", "bucket", "create", "cli-weur", "--location", "weur"]);
  assert.match(hinted.stdout, /with location hint WEUR and default storage class of Standard\./);

  const list = await cli(["r2", "bucket", "list"]);
  assert.equal(list.code, 0, list.stderr);
  assert.match(list.stdout, /Listing buckets\.\.\./);
  assert.match(list.stdout, /name: {11}cli-bucket\ncreation_date: {2}\d{4}-\d\d-\d\dT/);
  assert.match(list.stdout, /name: {11}cli-weur/);

  const del = await cli(["r2", "bucket", "delete", "cli-weur"]);
  assert.equal(del.code, 0, del.stderr);
  assert.equal(del.stdout, "Deleting bucket cli-weur.\nDeleted bucket cli-weur.\n");
  assert.doesNotMatch((await cli(["r2", "bucket", "list"])).stdout, /cli-weur/);
});

test("bucket errors: invalid name, duplicate, delete of a missing or non-empty bucket", async () => {
  const bad = await cli(["r2", "bucket", "create", "Bad_Name"]);
  assert.equal(bad.code, 1);
  assert.match(bad.stderr, /The bucket name "Bad_Name" is invalid\. Bucket names must begin and end with an alphanumeric character/);
  await cli(["r2", "bucket", "create", "dup-bucket"]);
  const dup = await cli(["r2", "bucket", "create", "dup-bucket"]);
  assert.equal(dup.code, 1);
  assert.match(dup.stderr, /already exists.*\[code: 10004\]/s);
  const missing = await cli(["r2", "bucket", "delete", "never-made"]);
  assert.equal(missing.code, 1);
  assert.match(missing.stderr, /\[code: 10006\]/);
  await cli(["r2", "object", "put", "dup-bucket/k", "--pipe"], "v");
  const full = await cli(["r2", "bucket", "delete", "dup-bucket"]);
  assert.equal(full.code, 1);
  assert.match(full.stderr, /not empty.*\[code: 10008\]/s);
});

test("object put --file / --pipe, get --file / --pipe / default path, delete", async () => {
  await cli(["r2", "bucket", "create", "obj-cli"]);
  writeFileSync(join(work, "hello.txt"), "hello from a file\n");
  const put = await cli(["r2", "object", "put", "obj-cli/docs/hello.txt", "--file", "hello.txt", "--content-type", "text/plain", "--cc", "no-store"]);
  assert.equal(put.code, 0, put.stderr);
  assert.equal(put.stdout, 'Creating object "docs/hello.txt" in bucket "obj-cli".\nUpload complete.\n');
  const head = await fetch(`${p.apiUrl}/accounts/${p.accountId}/r2/buckets/obj-cli/objects/docs/hello.txt`, { headers: p.headers() });
  assert.equal(head.headers.get("content-type"), "text/plain");
  assert.equal(head.headers.get("cache-control"), "no-store");
  await head.arrayBuffer();

  const piped = await cli(["r2", "object", "get", "obj-cli/docs/hello.txt", "--pipe"]);
  assert.equal(piped.code, 0, piped.stderr);
  assert.equal(piped.stdout, "hello from a file\n", "only the bytes on stdout");

  const toFile = await cli(["r2", "object", "get", "obj-cli/docs/hello.txt", "--file", "out.txt"]);
  assert.equal(toFile.stdout, 'Downloading "docs/hello.txt" from "obj-cli".\nDownload complete.\n');
  assert.equal(readFileSync(join(work, "out.txt"), "utf8"), "hello from a file\n");
  assert.deepEqual(
    readdirSync(work).filter((f) => f.endsWith(".partial")),
    [],
    "the temporary download file was renamed into place",
  );
  const byKey = await cli(["r2", "object", "get", "obj-cli/docs/hello.txt"]);
  assert.equal(byKey.code, 0, byKey.stderr);
  assert.equal(readFileSync(join(work, "docs", "hello.txt"), "utf8"), "hello from a file\n");

  const binary = Buffer.from(Array.from({ length: 256 }, (_, i) => i));
  const pipedIn = await cli(["r2", "object", "put", "obj-cli/bin/all-bytes", "--pipe"], binary);
  assert.equal(pipedIn.code, 0, pipedIn.stderr);
  const back = await cli(["r2", "object", "get", "obj-cli/bin/all-bytes", "--pipe"]);
  assert.ok(back.stdoutBytes.equals(binary));

  const del = await cli(["r2", "object", "delete", "obj-cli/docs/hello.txt"]);
  assert.equal(del.stdout, 'Deleting object "docs/hello.txt" from bucket "obj-cli".\nDelete complete.\n');
  const missing = await cli(["r2", "object", "get", "obj-cli/docs/hello.txt", "--pipe"]);
  assert.equal(missing.code, 1);
  assert.match(missing.stderr, /The specified key does not exist\./);
  assert.equal(missing.stdout, "");
});

test("object command usage errors go to stderr with exit code 1", async () => {
  const neither = await cli(["r2", "object", "put", "obj-cli/x"]);
  assert.equal(neither.code, 1);
  assert.match(neither.stderr, /Either the --file or --pipe options are required\./);
  const noFile = await cli(["r2", "object", "put", "obj-cli/x", "--file", "does-not-exist.bin"]);
  assert.equal(noFile.code, 1);
  assert.match(noFile.stderr, /The file "does-not-exist\.bin" does not exist\./);
  const badPath = await cli(["r2", "object", "get", "no-slash", "--pipe"]);
  assert.equal(badPath.code, 1);
  assert.match(badPath.stderr, /The object path must be in the form of \{bucket\}\/\{key\} you provided no-slash/);
  const climbing = await cli(["r2", "object", "get", "obj-cli/../../etc/passwd"]);
  assert.equal(climbing.code, 1);
  assert.match(climbing.stderr, /inside the current directory/);
});

test("a 64 MiB object streams through the CLI and the server without being held in memory", async () => {
  const MiB = 1024 * 1024;
  const file = join(work, "big.bin");
  const fd = openSync(file, "w");
  const want = createHash("md5");
  const chunk = Buffer.alloc(MiB);
  for (let i = 0; i < 64; i++) {
    for (let j = 0; j < chunk.length; j += 4) chunk.writeUInt32LE((i * 2654435761 + j * 40503) >>> 0, j);
    writeSync(fd, chunk);
    want.update(chunk);
  }
  closeSync(fd);
  const status = (field: string) => Number(new RegExp(`${field}:\\s+(\\d+) kB`).exec(readFileSync(`/proc/${p.process.pid}/status`, "utf8"))![1]) * 1024;

  await cli(["r2", "bucket", "create", "big-bucket"]);
  // Against the resident size now (not the earlier peak), so buffering the object would show as >= 64 MiB of growth.
  const before = status("VmRSS");
  const hwmBefore = status("VmHWM");
  const put = await cli(["r2", "object", "put", "big-bucket/big.bin", "--file", "big.bin"]);
  assert.equal(put.code, 0, put.stderr);
  assert.equal(put.stderr, "", "no progress bar when stderr is not a terminal");
  const get = await cli(["r2", "object", "get", "big-bucket/big.bin", "--file", "big-copy.bin"]);
  assert.equal(get.code, 0, get.stderr);
  const growth = status("VmHWM") - before;
  if (process.env.R2_TEST_VERBOSE)
    console.log(
      `server RSS before ${(before / MiB).toFixed(1)} MiB (peak ${(hwmBefore / MiB).toFixed(1)}), peak after ${(status("VmHWM") / MiB).toFixed(1)} MiB`,
    );
  assert.ok(growth < 48 * MiB, `server peak RSS grew by ${(growth / MiB).toFixed(1)} MiB for a 64 MiB object`);

  const got = createHash("md5");
  for await (const c of createReadStream(join(work, "big-copy.bin"))) got.update(c as Buffer);
  assert.equal(got.digest("hex"), want.digest("hex"));
});

test("a large upload and download show a progress bar on a terminal", async (t) => {
  if (!terminalAvailable()) return t.skip("needs util-linux `script` for a pseudo-terminal");
  writeFileSync(join(work, "tty.bin"), Buffer.alloc(6 * 1024 * 1024, 1));
  await cli(["r2", "bucket", "create", "tty-bucket"]);
  const onTerminal = async (args: string[]) => {
    const run = await runOnTerminal(args, { cwd: work, env: { EDGE_API_URL: p.apiUrl, EDGE_API_TOKEN: p.token, EDGE_ACCOUNT_ID: p.accountId } });
    assert.equal(run.code, 0, run.screen);
    return run.screen;
  };
  const up = await onTerminal(["r2", "object", "put", "tty-bucket/tty.bin", "--file", "tty.bin"]);
  assert.match(up, /Uploading \[[^\]]*\] 100% \| 6\.0 MiB\/6\.0 MiB/);
  assert.match(up, /Upload complete\./);
  const down = await onTerminal(["r2", "object", "get", "tty-bucket/tty.bin", "--file", "tty-copy.bin"]);
  assert.match(down, /Downloading \[[^\]]*\] 100%/);
  assert.equal(readFileSync(join(work, "tty-copy.bin")).length, 6 * 1024 * 1024);
});

test("bucket notification create, list, delete: rules sent as the API takes them; errors to stderr with exit 1", async () => {
  assert.equal((await cli(["r2", "bucket", "create", "cli-notify"])).code, 0);
  assert.equal((await cli(["queues", "create", "cli-notify-q"])).code, 0);
  const created = await cli([
    "r2",
    "bucket",
    "notification",
    "create",
    "cli-notify",
    "--event-types",
    "object-create",
    "--queue",
    "cli-notify-q",
    "--prefix",
    "img/",
    "--description",
    "images",
  ]);
  assert.equal(created.code, 0, created.stderr);
  assert.match(created.stdout, /Event notification rule created successfully!/);
  const second = await cli(["r2", "bucket", "notification", "create", "cli-notify", "--event-type", "object-delete", "--queue", "cli-notify-q"]);
  assert.equal(second.code, 0, second.stderr);

  const listed = await cli(["r2", "bucket", "notification", "list", "cli-notify"]);
  assert.equal(listed.code, 0, listed.stderr);
  assert.match(
    listed.stdout,
    /queue_name: {3}cli-notify-q\nprefix: {7}img\/\nsuffix: {7}\(all suffixes\)\nevent_type: {3}PutObject,CompleteMultipartUpload,CopyObject\ndescription: {2}images/,
  );
  assert.match(listed.stdout, /prefix: {7}\(all prefixes\)\nsuffix: {7}\(all suffixes\)\nevent_type: {3}DeleteObject,LifecycleDeletion/);
  const json = JSON.parse((await cli(["r2", "bucket", "notification", "list", "cli-notify", "--json"])).stdout);
  const rules = json.queues[0].rules as { ruleId: string; actions: string[] }[];
  assert.equal(rules.length, 2);

  for (const [args, message] of [
    [["r2", "bucket", "notification", "create", "cli-notify", "--event-types", "object-create", "--queue", "cli-notify-q"], /overlaps rule/],
    [["r2", "bucket", "notification", "create", "cli-notify", "--event-types", "object-moved", "--queue", "cli-notify-q"], /Unknown event type "object-moved"/],
    [["r2", "bucket", "notification", "create", "cli-notify", "--queue", "cli-notify-q"], /Missing required option --event-types/],
    [
      ["r2", "bucket", "notification", "create", "cli-notify", "--event-types", "object-delete", "--queue", "no-such-queue"],
      /Queue "no-such-queue" does not exist/,
    ],
    [["r2", "bucket", "notification", "delete", "cli-notify", "--queue", "cli-notify-q", "--rule", "no-such-rule"], /has no rule no-such-rule/],
  ] as [string[], RegExp][]) {
    const r = await cli(args);
    assert.equal(r.code, 1, `${args.join(" ")}: ${r.stdout}`);
    assert.match(r.stderr, message);
  }

  const one = await cli(["r2", "bucket", "notification", "delete", "cli-notify", "--queue", "cli-notify-q", "--rule", rules[1]!.ruleId]);
  assert.equal(one.code, 0, one.stderr);
  assert.equal(JSON.parse((await cli(["r2", "bucket", "notification", "list", "cli-notify", "--json"])).stdout).queues[0].rules.length, 1);
  const all = await cli(["r2", "bucket", "notification", "delete", "cli-notify", "--queue", "cli-notify-q"]);
  assert.equal(all.code, 0, all.stderr);
  assert.match((await cli(["r2", "bucket", "notification", "list", "cli-notify"])).stdout, /has no event notification rules/);
  const help = await cli(["r2", "bucket", "notification", "--help"]);
  assert.match(help.stdout, /create/);
  assert.match(help.stdout, /delete/);
});
